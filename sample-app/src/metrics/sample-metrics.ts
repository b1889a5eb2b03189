import { metrics } from '@opentelemetry/api';
import { PrometheusExporter, PrometheusSerializer } from '@opentelemetry/exporter-prometheus';
import { MeterProvider } from '@opentelemetry/sdk-metrics';

/** The exporter of this process's metrics, once `registerSampleMetrics` has run. */
let exporter: PrometheusExporter | undefined;
const serializer = new PrometheusSerializer();

/**
 * Registers the OpenTelemetry MeterProvider of the sample, read by a Prometheus exporter (without its own HTTP
 * server: `GET /metrics` of the app serves it). It must run before the Nest application is created: `LockModule`
 * takes its meter when it starts. Once per process; later calls return the same exporter.
 */
export function registerSampleMetrics(): PrometheusExporter {
  if (exporter) return exporter;
  exporter = new PrometheusExporter({ preventServerStart: true });
  metrics.setGlobalMeterProvider(new MeterProvider({ readers: [exporter] }));
  return exporter;
}

/** The metrics in Prometheus's text format, or undefined when `registerSampleMetrics` has not run. */
export async function scrapeSampleMetrics(): Promise<string | undefined> {
  if (!exporter) return undefined;
  const { resourceMetrics, errors } = await exporter.collect();
  if (errors.length > 0) throw errors[0];
  return serializer.serialize(resourceMetrics);
}
