/**
 * Metrics and traces through OpenTelemetry (`LockModuleOptions.telemetry`). They are recorded through
 * `@opentelemetry/api` when the application has it installed, and go to the MeterProvider and TracerProvider the
 * application registers (register them before the Nest application is created). Without the package, or with
 * `enabled: false`, nothing is recorded and nothing is loaded.
 * @publicApi
 */
export interface LockTelemetryOptions {
  /**
   * Record metrics and spans. `false` never loads `@opentelemetry/api`.
   * @default true
   */
  enabled?: boolean;
  /**
   * Maps a lock name to the value of the `lock.name` attribute of the metrics. Keep its results few: every distinct
   * value is a time series of every instrument. Spans carry the full names whatever it returns.
   * @default the name up to its first `:` (`loan:123` → `loan`; a name without `:` is kept whole)
   */
  lockNameAttribute?: (name: string) => string;
}
