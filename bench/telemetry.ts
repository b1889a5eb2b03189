import * as api from '@opentelemetry/api';
import { performance } from 'node:perf_hooks';
import { setImmediate } from 'node:timers/promises';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  AggregationTemporality,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
} from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, BatchSpanProcessor, type SpanExporter } from '@opentelemetry/sdk-trace-base';
import type { Contender } from './contenders/contender.js';
import { type LibraryVariant, libraryContender } from './contenders/library.contender.js';
// The recorder itself, apart from the module (it is internal to the package): measured with no database around it.
import { OtelLockTelemetry } from '../lib/telemetry/otel-lock-telemetry.service.js';
import { resolveLockOptions } from '../lib/utils/resolve-lock-options.util.js';
import type { RecordingCost } from './report.js';
import { W1 } from './workloads.js';

/** How often the registered metric reader collects (as an application exporting every few seconds does). */
const EXPORT_INTERVAL_MS = 1000;

/** A span exporter that drops what it is given: the spans are still made, sampled, batched and handed over. */
const droppingSpanExporter: SpanExporter = {
  export: (_spans, done) => done({ code: 0 }), // ExportResultCode.SUCCESS
  shutdown: async () => undefined,
};

/** The OpenTelemetry SDK as an application registers it: metrics read periodically, every span sampled and batched. */
export interface RegisteredSdk {
  /** Registers the TracerProvider, or unregisters it (the API's no-op spans then): for the applications booted next. */
  tracing(on: boolean): void;
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
  api.context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  api.metrics.setGlobalMeterProvider(meterProvider);
  api.trace.setGlobalTracerProvider(tracerProvider);
  let tracing = true;
  return {
    tracing(on) {
      if (on === tracing) return;
      tracing = on;
      if (on) api.trace.setGlobalTracerProvider(tracerProvider);
      else api.trace.disable();
    },
    async dispose() {
      clearInterval(clear);
      api.metrics.disable();
      api.trace.disable();
      api.context.disable();
      await Promise.all([meterProvider.shutdown(), tracerProvider.shutdown()]);
    },
  };
}

/** `contender`, booted with the SDK's TracerProvider registered or not. */
function withTracing(contender: Contender, sdk: RegisteredSdk, on: boolean): Contender {
  return {
    ...contender,
    open: (workload) => {
      sdk.tracing(on);
      return contender.open(workload);
    },
  };
}

/**
 * The library with telemetry off, on (recording into the registered SDK: metrics and spans), and on with metrics
 * only (no TracerProvider registered), for the overhead figures.
 */
export function telemetryContenders(url: string, sdk: RegisteredSdk): Contender[] {
  const variant = (id: LibraryVariant['id'], name: string, enabled: boolean, tracing: boolean): Contender =>
    withTracing(libraryContender(url, { id, name, options: { telemetry: { enabled } } }), sdk, tracing);
  return [
    variant('library-telemetry-off', 'LockService, telemetry off', false, true),
    variant('library-telemetry-on', 'LockService, telemetry on + SDK', true, true),
    variant('library-metrics-only', 'LockService, telemetry on, metrics SDK only', true, false),
  ];
}

/**
 * What recording costs by itself: the metrics and spans of `calls` grants + releases of one lock, into the SDK
 * registered now, with no database (run while `registerBenchSdk` is in force). Yields to the event loop every 1000
 * calls, so that the periodic reader and the span batches run as they would.
 */
export async function measureRecordingCost(calls = 100_000): Promise<RecordingCost> {
  const telemetry = new OtelLockTelemetry(api, resolveLockOptions({ appId: 'bench-recording' }));
  const group = W1.nextGroup();
  const once = (stamp: number): void => {
    telemetry.acquiring(group, 0).ended(stamp);
    telemetry.releasing(stamp).ended();
  };
  for (let stamp = 1; stamp <= 20_000; stamp++) once(stamp); // warm-up: JIT, attribute caches, instruments
  const started = performance.now();
  for (let stamp = 1; stamp <= calls; stamp++) {
    once(stamp);
    if (stamp % 1000 === 0) await setImmediate();
  }
  const microsPerCall = ((performance.now() - started) * 1000) / calls;
  telemetry.onModuleDestroy();
  return { microsPerCall, calls };
}
