import { registerSampleMetrics } from '../../sample-app/src/metrics/sample-metrics.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { call, eventually, grantOf, type SampleInstance, startSampleInstance } from './support/sample-instance.js';

/** One sample of the Prometheus text format: `name{labels} value`. */
interface PromSample {
  readonly name: string;
  readonly labels: Record<string, string>;
  readonly value: number;
}

function parsePrometheus(text: string): PromSample[] {
  const samples: PromSample[] = [];
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match) continue;
    const labels: Record<string, string> = {};
    for (const [, key, value] of (match[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) {
      labels[key!] = value!;
    }
    samples.push({ name: match[1]!, labels, value: Number(match[3]) });
  }
  return samples;
}

/** The sum of the samples named `name` whose labels include `match`. */
function valueOf(samples: readonly PromSample[], name: string, match: Record<string, string>): number {
  return samples
    .filter((s) => s.name === name && Object.entries(match).every(([key, value]) => s.labels[key] === value))
    .reduce((sum, s) => sum + s.value, 0);
}

/**
 * The sample exports the library's metrics on `GET /metrics` through the OpenTelemetry SDK's Prometheus exporter:
 * locked calls over HTTP (repayments under `loan:1`, WS1 reads through `@WithLocks`) show up there, per name prefix.
 */
describe('sample app: GET /metrics', () => {
  let db: TestDatabase;
  let a: SampleInstance;

  beforeAll(async () => {
    registerSampleMetrics(); // before the application starts, as main.ts does
    db = await createTestDatabase({ migrate: false });
    a = await startSampleInstance(db.url, { appId: 'metrics-a', repaymentMs: 200 });
  });
  afterAll(async () => {
    await a?.close();
    await db?.drop();
  });

  it('serves grants, busy refusals, releases and durations with bounded lock names, in Prometheus format', async () => {
    for (let i = 0; i < 3; i++) {
      expect((await call(`${a.baseUrl}/loans/1/repayments`, { amountCents: 100 })).status).toBe(201);
    }
    // A repayment holds loan:1 for 200 ms: a second one meanwhile is refused (HTTP 423, a busy refusal).
    const first = call(`${a.baseUrl}/loans/1/repayments`, { amountCents: 100 });
    await eventually(() => grantOf(a, 'loan:1', 'write'), 'loan:1 held by the first repayment');
    expect((await call(`${a.baseUrl}/loans/1/repayments`, { amountCents: 100 })).status).toBe(423);
    expect((await first).status).toBe(201);
    for (let i = 0; i < 2; i++) expect((await call(`${a.baseUrl}/ws1/rates`)).status).toBe(200);

    const response = await fetch(`${a.baseUrl}/metrics`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/plain/);
    const text = await response.text();
    expect(text).toContain('# TYPE nestjs_db_locks_grants_total counter');
    expect(text).toContain('# TYPE nestjs_db_locks_hold_duration histogram');
    const samples = parsePrometheus(text);
    const loan = { app_id: 'metrics-a', lock_name: 'loan', lock_mode: 'write' };
    // `loan:1` is exported as `loan`: no label carries a full dynamic name.
    expect(samples.some((s) => s.labels.lock_name?.includes(':'))).toBe(false);
    expect(valueOf(samples, 'nestjs_db_locks_grants_total', loan)).toBe(4);
    expect(valueOf(samples, 'nestjs_db_locks_busy_total', loan)).toBe(1);
    expect(valueOf(samples, 'nestjs_db_locks_releases_total', loan)).toBe(4);
    expect(valueOf(samples, 'nestjs_db_locks_acquire_duration_count', { ...loan, outcome: 'granted' })).toBe(4);
    expect(valueOf(samples, 'nestjs_db_locks_acquire_duration_count', { ...loan, outcome: 'busy' })).toBe(1);
    // Each repayment holds its lock for at least its 200 ms of "bank transfer": the hold times say so, in seconds.
    expect(valueOf(samples, 'nestjs_db_locks_hold_duration_count', loan)).toBe(4);
    const held = valueOf(samples, 'nestjs_db_locks_hold_duration_sum', loan);
    expect(held).toBeGreaterThanOrEqual(0.8);
    expect(held).toBeLessThan(30);
    expect(valueOf(samples, 'nestjs_db_locks_hold_duration_bucket', { ...loan, le: '0.1' })).toBe(0);
    expect(valueOf(samples, 'nestjs_db_locks_hold_duration_bucket', { ...loan, le: '+Inf' })).toBe(4);
    const ws1 = { app_id: 'metrics-a', lock_name: 'WS1', lock_mode: 'read' };
    expect(valueOf(samples, 'nestjs_db_locks_grants_total', ws1)).toBe(2);
    expect(valueOf(samples, 'nestjs_db_locks_releases_total', ws1)).toBe(2);
    expect(samples.find((s) => s.name === 'nestjs_db_locks_grants_held' && s.labels.app_id === 'metrics-a')?.value).toBe(0);
    expect(samples.find((s) => s.name === 'nestjs_db_locks_waiters' && s.labels.app_id === 'metrics-a')?.value).toBe(0);
  });
});
