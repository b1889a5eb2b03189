import { Injectable } from '@nestjs/common';
import { SpanStatusCode } from '@opentelemetry/api';
import {
  IllegalMonitorStateError,
  LockConfigurationError,
  LockService,
  LockStoreError,
  WithLocks,
} from 'nestjs-db-locks';
import { loadOtelApi } from '../../lib/telemetry/otel-api.loader.js';
import { createLockApp, type LockApp, type TestLockOptions } from '../support/lock-app.js';
import { type InMemorySdk, registerInMemorySdk, total } from '../support/otel-sdk.js';
import { DIALECTS } from '../support/dialects.js';
import { expireLeases } from '../support/dialect-sql.js';
import type { TestDatabase } from '../support/test-database.js';
import { until } from '../support/until.js';

const M = (name: string) => `nestjs_db_locks.${name}`;

@Injectable()
class Approvals {
  constructor(readonly locks: LockService) {}

  @WithLocks('APPROVAL_WRITE')
  async approve(): Promise<number | undefined> {
    return this.locks.currentLock()?.stamp;
  }

  @WithLocks('APPROVAL_WRITE')
  async fail(): Promise<never> {
    throw new Error('approval refused');
  }
}

for (const dialect of DIALECTS) dialect.describe(`metrics and traces through OpenTelemetry on ${dialect.name}`, () => {
  let db: TestDatabase;
  let sdk: InMemorySdk;
  const apps: LockApp[] = [];
  /** Quiet instances: no background task touches the database unless a test asks for it. */
  const start = async (options: TestLockOptions, providers: Parameters<typeof createLockApp>[3] = []) => {
    const quiet = { leaseMs: 60_000, renewIntervalMs: 59_000, reaperIntervalMs: 0, permitsRefreshIntervalMs: 0 };
    const app = await createLockApp(db.url, { ...quiet, ...options }, 4, providers);
    apps.push(app);
    return app;
  };

  beforeAll(async () => {
    sdk = registerInMemorySdk();
    db = await dialect.createDatabase();
  });
  afterEach(async () => {
    await Promise.all(apps.splice(0).map((app) => app.close()));
    if (dialect.canRefuseConnections) await db.refuseConnections(false);
    await db.query('DELETE FROM locking');
  });
  afterAll(async () => {
    await db.drop();
    await sdk.shutdown();
  });

  it('counts grants, busy refusals and releases per name prefix, with acquisition and hold times', async () => {
    const one = await start({ appId: 'count-one' });
    const two = await start({ appId: 'count-two' });
    const stamps = [];
    for (const name of ['loan:1', 'loan:2', 'loan:3']) stamps.push(await one.locks.tryLocks([{ name, mode: 'write' }]));
    expect(await two.locks.tryLocks(['loan:1_WRITE'])).toBe(0);
    expect(await two.locks.tryLocks(['loan:2_READ'])).toBe(0);
    for (const stamp of stamps) await one.locks.releaseLocks(stamp);

    const collected = await sdk.collect();
    const loanOne = { 'lock.name': 'loan', 'app.id': 'count-one' };
    // `loan:1`, `loan:2`, `loan:3`: one series, `loan`.
    expect((collected.get(M('grants')) ?? []).filter((p) => p.attributes['app.id'] === 'count-one')).toEqual([
      { attributes: { ...loanOne, 'lock.mode': 'write' }, value: 3 },
    ]);
    expect(total(collected, M('busy'), { 'app.id': 'count-two', 'lock.name': 'loan', 'lock.mode': 'write' })).toBe(1);
    expect(total(collected, M('busy'), { 'app.id': 'count-two', 'lock.name': 'loan', 'lock.mode': 'read' })).toBe(1);
    expect(total(collected, M('grants'), { 'app.id': 'count-two' })).toBe(0);
    expect(total(collected, M('releases'), loanOne)).toBe(3);
    expect(total(collected, M('acquire.duration'), { ...loanOne, outcome: 'granted' })).toBe(3);
    expect(total(collected, M('acquire.duration'), { 'app.id': 'count-two', outcome: 'busy' })).toBe(2);
    expect(total(collected, M('wait.duration'), { 'app.id': 'count-one' })).toBe(0);
    const [hold] = (collected.get(M('hold.duration')) ?? []).filter((p) => p.attributes['app.id'] === 'count-one');
    expect(hold).toMatchObject({ count: 3 });
    expect(hold!.sum).toBeGreaterThan(0);
    expect(hold!.sum).toBeLessThan(60); // seconds: measured in this process, not in milliseconds
  });

  it('maps names through lockNameAttribute, and adds one data point per lock of a group', async () => {
    const app = await start({ appId: 'mapped', telemetry: { lockNameAttribute: (name) => name.split('/')[0]! } });
    const stamp = await app.locks.tryLocks(['tenant-a/orders_WRITE', 'tenant-a/stock_READ', 'pricing:7_READ']);
    await app.locks.releaseLocks(stamp);
    const collected = await sdk.collect();
    const grants = (collected.get(M('grants')) ?? []).filter((p) => p.attributes['app.id'] === 'mapped');
    expect(grants.map((p) => [p.attributes['lock.name'], p.attributes['lock.mode'], p.value]).sort()).toEqual([
      ['pricing:7', 'read', 1],
      ['tenant-a', 'read', 1],
      ['tenant-a', 'write', 1],
    ]);
  });

  it('never fails a lock call when the name mapping throws: the default mapping stands in', async () => {
    const app = await start({
      appId: 'throwing-map',
      telemetry: {
        lockNameAttribute: () => {
          throw new Error('mapping broken');
        },
      },
    });
    const stamp = await app.locks.tryLocks(['invoice:42_WRITE']);
    expect(stamp).toBeGreaterThan(0);
    await app.locks.releaseLocks(stamp);
    const collected = await sdk.collect();
    expect(total(collected, M('grants'), { 'app.id': 'throwing-map', 'lock.name': 'invoice' })).toBe(1);
    expect(total(collected, M('releases'), { 'app.id': 'throwing-map', 'lock.name': 'invoice' })).toBe(1);
  });

  it('counts a lost grant for its holder and a reaped one for the reaper; gauges show grants held and waiters', async () => {
    const holder = await start({ appId: 'lost-holder', renewIntervalMs: 50 });
    const reaper = await start({ appId: 'lost-reaper' });
    const stamp = await holder.locks.tryLocks(['FROZEN:9_WRITE']);
    expect(total(await sdk.collect(), M('grants.held'), { 'app.id': 'lost-holder' })).toBe(1);
    const signal = holder.locks.getSignal(stamp);
    await expireLeases(db, dialect);
    await until(() => signal.aborted);
    expect(await reaper.locks.reapStaleLocks()).toBe(1);

    // A waiter, woken by a release.
    const owner = await reaper.locks.tryLocks(['QUEUE_WRITE']);
    const waiting = holder.locks.tryLocks(['QUEUE_WRITE'], { waitMs: 10_000 });
    await until(async () => total(await sdk.collect(), M('waiters'), { 'app.id': 'lost-holder' }) === 1);
    await reaper.locks.releaseLocks(owner);
    const waited = await waiting;
    expect(waited).toBeGreaterThan(0);

    const collected = await sdk.collect();
    expect(total(collected, M('lost'), { 'app.id': 'lost-holder', 'lock.name': 'FROZEN' })).toBe(1);
    expect(total(collected, M('reaped'), { 'app.id': 'lost-reaper' })).toBe(1);
    expect(total(collected, M('reaped'), { 'app.id': 'lost-holder' })).toBe(0);
    expect(total(collected, M('hold.duration'), { 'app.id': 'lost-holder' })).toBe(0); // a lost grant was never released
    expect(total(collected, M('waiters'), { 'app.id': 'lost-holder' })).toBe(0);
    expect(total(collected, M('grants.held'), { 'app.id': 'lost-holder' })).toBe(1); // the waiter's grant
    expect(total(collected, M('wait.duration'), { 'app.id': 'lost-holder', 'lock.name': 'QUEUE', outcome: 'granted' })).toBe(1);
    await holder.locks.releaseLocks(waited);
  });

  it('counts the lock rows recovered at start-up', async () => {
    const first = await start({ appId: 'phoenix' });
    await first.locks.tryLocks(['NEST_WRITE', 'EGG_READ']);
    expect(total(await sdk.collect(), M('grants'), { 'app.id': 'phoenix' })).toBe(2);
    await first.close();
    apps.splice(apps.indexOf(first), 1);
    await start({ appId: 'phoenix' });
    expect(total(await sdk.collect(), M('recovered'), { 'app.id': 'phoenix' })).toBe(2);
  });

  // Refusing one database's connections is a PostgreSQL feature (ALLOW_CONNECTIONS); MariaDB's store errors are
  // exercised by the connection-reset and restart fault specs.
  (dialect.canRefuseConnections ? it : it.skip)('counts store errors by operation and kind when the database refuses connections', async () => {
    const app = await start({ appId: 'refused', retry: { maxAttempts: 1 } });
    const before = await sdk.collect();
    await db.refuseConnections(true);
    const error = await app.locks.tryLocks(['DOWN_WRITE']).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockStoreError);
    const { operation, code, outcomeUnknown } = error as LockStoreError;
    const kind = { 'app.id': 'refused', operation, 'error.type': code ?? 'LockStoreError', outcome_unknown: outcomeUnknown };
    const after = await sdk.collect();
    expect(total(after, M('store.errors'), kind) - total(before, M('store.errors'), kind)).toBe(1);
    expect(total(after, M('store.errors'), { 'app.id': 'refused' }) - total(before, M('store.errors'), { 'app.id': 'refused' })).toBe(1);
    expect(total(after, M('acquire.duration'), { 'app.id': 'refused', outcome: 'error' })).toBe(1);
    const span = sdk.spans().filter((s) => s.name === 'LockService.tryLocks' && s.attributes['app.id'] === 'refused').pop();
    expect(span?.status.code).toBe(SpanStatusCode.ERROR);
  });

  it('traces tryLocks, releaseLocks and locked methods with their stamps, nested, errors with status ERROR', async () => {
    const app = await start({ appId: 'traced' }, [Approvals]);
    const approvals = app.app.get(Approvals);
    const stamp = await approvals.approve();
    expect(stamp).toBeGreaterThan(0);
    await expect(approvals.fail()).rejects.toThrow('approval refused');
    await expect(app.locks.releaseLocks(stamp!)).rejects.toThrow(IllegalMonitorStateError);

    const spans = sdk.spans().filter((s) => s.attributes['app.id'] === 'traced');
    const [approve, failed] = spans.filter((s) => s.name === 'WithLocks Approvals.approve' || s.name === 'WithLocks Approvals.fail');
    expect(approve).toMatchObject({ name: 'WithLocks Approvals.approve', attributes: { 'lock.stamp': stamp } });
    expect(approve!.status.code).not.toBe(SpanStatusCode.ERROR);
    const children = spans.filter((s) => s.parentSpanContext?.spanId === approve!.spanContext().spanId);
    expect(children.map((s) => s.name).sort()).toEqual(['LockService.releaseLocks', 'LockService.tryLocks']);
    expect(children.find((s) => s.name === 'LockService.tryLocks')?.attributes).toMatchObject({
      'lock.stamp': stamp,
      'lock.names': ['APPROVAL'],
      'lock.modes': ['write'],
      'lock.outcome': 'granted',
    });
    expect(failed).toMatchObject({ name: 'WithLocks Approvals.fail', status: { code: SpanStatusCode.ERROR, message: 'approval refused' } });
    const release = spans.filter((s) => s.name === 'LockService.releaseLocks').pop();
    expect(release).toMatchObject({ attributes: { 'lock.stamp': stamp }, status: { code: SpanStatusCode.ERROR } });
    expect(release!.events.map((e) => e.name)).toContain('exception');
  });

  it('works with telemetry disabled: grants and releases, nothing recorded', async () => {
    const app = await start({ appId: 'dark', telemetry: { enabled: false } });
    const stamp = await app.locks.tryLocks(['DARK_WRITE']);
    expect(stamp).toBeGreaterThan(0);
    await app.locks.releaseLocks(stamp);
    expect(await app.locks.tryLocks(['DARK_WRITE'])).toBeGreaterThan(0);
    const collected = await sdk.collect();
    const points = [...collected.values()].flat().filter((p) => p.attributes['app.id'] === 'dark');
    expect(points).toEqual([]);
    expect(sdk.spans().filter((s) => s.attributes['app.id'] === 'dark')).toEqual([]);
  });

  it('refuses bad telemetry options, and runs without @opentelemetry/api', async () => {
    for (const telemetry of [{ enabled: 'yes' }, { lockNameAttribute: 'prefix' }, 'on']) {
      await expect(start({ appId: 'bad-options', telemetry: telemetry as never })).rejects.toThrow(LockConfigurationError);
    }
    expect(await loadOtelApi('@opentelemetry/api-that-is-not-installed')).toBeUndefined();
    expect(await loadOtelApi()).toBeDefined();
  });
});
