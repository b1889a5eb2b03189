import { context, metrics, trace, type Attributes } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  AggregationTemporality,
  DataPointType,
  MeterProvider,
  MetricReader,
  type ResourceMetrics,
} from '@opentelemetry/sdk-metrics';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';

/**
 * A reader that collects on demand, cumulative by default (the counts since the instruments were created). Delta shows
 * only what the instruments observed since the last collection: the SDK re-exports, under cumulative temporality, the
 * last point of a gauge's series that its callback no longer observes.
 */
class OnDemandReader extends MetricReader {
  constructor(temporality: AggregationTemporality) {
    super({ aggregationTemporalitySelector: () => temporality });
  }
  protected async onForceFlush(): Promise<void> {}
  protected async onShutdown(): Promise<void> {}
}

/** One data point as the tests read it: its attributes and its value (a sum, a gauge, or a histogram's count/sum). */
export interface Point {
  readonly attributes: Attributes;
  readonly value: number;
  /** For histograms: the recorded values' count and sum. */
  readonly count?: number;
  readonly sum?: number;
}

/** An in-memory OpenTelemetry SDK registered globally, as an application registers one before it starts. */
export interface InMemorySdk {
  /** Collects every instrument now: metric name → data points. */
  collect(): Promise<Map<string, Point[]>>;
  /** The spans ended so far. */
  spans(): ReadableSpan[];
  shutdown(): Promise<void>;
}

/** Registers a MeterProvider (read on demand), a TracerProvider (spans kept in memory) and a context manager. */
export function registerInMemorySdk(temporality = AggregationTemporality.CUMULATIVE): InMemorySdk {
  const reader = new OnDemandReader(temporality);
  const meterProvider = new MeterProvider({ readers: [reader] });
  const exporter = new InMemorySpanExporter();
  const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const contextManager = new AsyncLocalStorageContextManager().enable();
  context.setGlobalContextManager(contextManager);
  metrics.setGlobalMeterProvider(meterProvider);
  trace.setGlobalTracerProvider(tracerProvider);
  return {
    async collect() {
      const { resourceMetrics, errors } = await reader.collect();
      if (errors.length > 0) throw errors[0];
      return pointsOf(resourceMetrics);
    },
    spans: () => exporter.getFinishedSpans(),
    async shutdown() {
      metrics.disable();
      trace.disable();
      context.disable();
      await Promise.all([meterProvider.shutdown(), tracerProvider.shutdown()]);
    },
  };
}

function pointsOf(resourceMetrics: ResourceMetrics): Map<string, Point[]> {
  const byName = new Map<string, Point[]>();
  for (const scope of resourceMetrics.scopeMetrics) {
    for (const metric of scope.metrics) {
      const points = byName.get(metric.descriptor.name) ?? [];
      for (const point of metric.dataPoints) {
        if (metric.dataPointType === DataPointType.HISTOGRAM) {
          const { count, sum = 0 } = point.value as { count: number; sum?: number };
          points.push({ attributes: point.attributes, value: count, count, sum });
        } else {
          points.push({ attributes: point.attributes, value: point.value as number });
        }
      }
      byName.set(metric.descriptor.name, points);
    }
  }
  return byName;
}

/** The sum of the values of `name`'s points whose attributes include `match`. */
export function total(collected: Map<string, Point[]>, name: string, match: Attributes = {}): number {
  return (collected.get(name) ?? [])
    .filter((point) => Object.entries(match).every(([key, value]) => point.attributes[key] === value))
    .reduce((sum, point) => sum + point.value, 0);
}
