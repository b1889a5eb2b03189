import { context, metrics, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  AggregationTemporality,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
} from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, BatchSpanProcessor, type SpanExporter } from '@opentelemetry/sdk-trace-base';
import type { Contender } from './contenders/contender.js';
import { libraryContender } from './contenders/library.contender.js';

/** How often the registered metric reader collects (as an application exporting every few seconds does). */
const EXPORT_INTERVAL_MS = 1000;

/** A span exporter that drops what it is given: the spans are still made, sampled, batched and handed over. */
const droppingSpanExporter: SpanExporter = {
  export: (_spans, done) => done({ code: 0 }), // ExportResultCode.SUCCESS
  shutdown: async () => undefined,
};

/** The OpenTelemetry SDK as an application registers it: metrics read periodically, every span sampled and batched. */
export interface RegisteredSdk {
  dispose(): Promise<void>;
}

/** Registers a MeterProvider (periodic reader, in-memory exporter), a TracerProvider and a context manager globally. */
export function registerBenchSdk(): RegisteredSdk {
  const exporter = new InMemoryMetricExporter(AggregationTemporality.DELTA);
  const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: EXPORT_INTERVAL_MS });
  const meterProvider = new MeterProvider({ readers: [reader] });
  const tracerProvider = new BasicTracerProvider({ spanProcessors: [new BatchSpanProcessor(droppingSpanExporter)] });
  // Delta temporality and a reset after every export: the in-memory exporter does not grow over the run.
  const clear = setInterval(() => exporter.reset(), EXPORT_INTERVAL_MS);
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  metrics.setGlobalMeterProvider(meterProvider);
  trace.setGlobalTracerProvider(tracerProvider);
  return {
    async dispose() {
      clearInterval(clear);
      metrics.disable();
      trace.disable();
      context.disable();
      await Promise.all([meterProvider.shutdown(), tracerProvider.shutdown()]);
    },
  };
}

/** The library with telemetry off, and on (recording into the registered SDK), for the overhead figure. */
export function telemetryContenders(url: string): Contender[] {
  return [
    libraryContender(url, {
      id: 'library-telemetry-off',
      name: 'LockService, telemetry off',
      options: { telemetry: { enabled: false } },
    }),
    libraryContender(url, {
      id: 'library-telemetry-on',
      name: 'LockService, telemetry on + SDK',
      options: { telemetry: { enabled: true } },
    }),
  ];
}
