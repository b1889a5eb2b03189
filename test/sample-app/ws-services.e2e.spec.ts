import type { LockedResponseBody } from 'nestjs-db-locks';
import { setTimeout as sleep } from 'node:timers/promises';
import type { PermitsView } from '../../sample-app/src/console/console-state.service.js';
import type { Ws1Build, Ws1Rates } from '../../sample-app/src/ws1/ws1-rates.service.js';
import type { Ws2Build, Ws2Prices } from '../../sample-app/src/ws2/ws2-prices.service.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { call, eventually, grantOf, type SampleInstance, startSampleInstance } from './support/sample-instance.js';

/**
 * Seed 000 on the sample app: two instances of the web services on one database. WS1's rebuild (WS1_WRITE) locks
 * WS1's readers out with HTTP 423; WS2's group (WS2_WRITE + WS1_READ) is refused whole meanwhile; a permits row
 * changes who may read, at once, and every instance's cache follows within its refresh interval.
 */
describe('sample app, seed 000: WS1 and WS2 sharing a database', () => {
  let db: TestDatabase;
  let a: SampleInstance;
  let b: SampleInstance;

  beforeAll(async () => {
    db = await createTestDatabase({ migrate: false });
    a = await startSampleInstance(db.url, { appId: 'ws-a', ws2RebuildMs: 1500 });
    b = await startSampleInstance(db.url, { appId: 'ws-b', ws2RebuildMs: 1500 });
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
    await db?.drop();
  });
  afterEach(async () => {
    await eventually(async () => ((await a.locks.getGrants()).length === 0 ? true : undefined), 'every lock released');
  });

  it('answers 423 to WS1 readers while WS1 rebuilds, and 200 with the new generation after', async () => {
    const before = await call<Ws1Rates>(`${b.baseUrl}/ws1/rates`);
    expect(before.status).toBe(200);
    expect(before.body).toMatchObject({ complete: true, generations: 1 });

    const rebuild = call<Ws1Build>(`${a.baseUrl}/ws1/rebuild`, {});
    await eventually(() => grantOf(b, 'WS1', 'write'), 'WS1_WRITE held by the rebuild');

    const statuses: number[] = [];
    const unlockedRowCounts: number[] = [];
    let locked: { status: number; headers: Headers; body: LockedResponseBody } | undefined;
    while (await grantOf(b, 'WS1', 'write')) {
      const read = await call<Ws1Rates & LockedResponseBody>(`${b.baseUrl}/ws1/rates`);
      statuses.push(read.status);
      if (read.status === 423) locked = read;
      else expect(read.body).toMatchObject({ complete: true, generations: 1 }); // never a half-built table
      const [raw] = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM ws1_rates');
      unlockedRowCounts.push(raw?.n ?? -1);
      await sleep(50);
    }
    // Without the lock, the table is visibly half-built during the rebuild: the 423 is what protects readers.
    expect(Math.min(...unlockedRowCounts)).toBeLessThan(6);
    expect(statuses.filter((s) => s === 423).length).toBeGreaterThanOrEqual(5);
    expect(locked?.headers.get('retry-after')).toBe('2');
    expect(locked?.body).toMatchObject({ statusCode: 423, locks: [{ name: 'WS1', mode: 'read' }] });

    const built = await rebuild;
    expect(built.status).toBe(200);
    expect(built.body.generation).toBe((before.body.generation ?? 0) + 1);
    const after = await call<Ws1Rates>(`${b.baseUrl}/ws1/rates`);
    expect(after.status).toBe(200);
    expect(after.body).toMatchObject({ generation: built.body.generation, complete: true, generations: 1 });
  });

  it("lets the rebuild wait for WS1's readers, refusing new readers meanwhile (writer preference)", async () => {
    const reader = await b.locks.tryLocks(['WS1_READ']); // a long report on instance B
    expect(reader).toBeGreaterThan(0);
    const rebuild = call<Ws1Build>(`${a.baseUrl}/ws1/rebuild`, {});
    await sleep(300);
    expect(await grantOf(a, 'WS1', 'write')).toBeUndefined(); // waiting, not running
    const newcomer = await call<LockedResponseBody>(`${a.baseUrl}/ws1/rates`);
    expect(newcomer.status).toBe(423); // read permits are not full (5): it yields to the waiting writer
    await b.locks.releaseLocks(reader);
    await eventually(() => grantOf(a, 'WS1', 'write'), 'the rebuild to take WS1_WRITE once the reader left', 1000);
    expect((await rebuild).status).toBe(200);
  });

  it('refuses WS2_WRITE + WS1_READ whole while WS1 rebuilds, and runs WS2 after', async () => {
    const rebuild = call<Ws1Build>(`${a.baseUrl}/ws1/rebuild`, {});
    await eventually(() => grantOf(b, 'WS1', 'write'), 'WS1_WRITE held by the rebuild');

    const refused = await call<LockedResponseBody>(`${b.baseUrl}/ws2/rebuild`, {});
    expect(refused.status).toBe(423);
    expect(await grantOf(b, 'WS2', 'write')).toBeUndefined(); // all or nothing: WS2_WRITE was not kept
    const ws1 = (await rebuild).body;

    const ran = await call<Ws2Build>(`${b.baseUrl}/ws2/rebuild`, {});
    expect(ran.status).toBe(200);
    expect(ran.body.ws1Generation).toBe(ws1.generation);
    const prices = await call<Ws2Prices>(`${a.baseUrl}/ws2/prices`);
    expect(prices.status).toBe(200);
    expect(prices.body.ws1Generation).toBe(ws1.generation);
    expect(prices.body.prices).toHaveLength(3 * 6);
  });

  it('applies a permits row at once, and every instance shows it within the refresh interval', async () => {
    const ws2 = call<Ws2Build>(`${a.baseUrl}/ws2/rebuild`, {}); // holds WS1_READ for 1.5 s
    const holder = await eventually(() => grantOf(b, 'WS1', 'read'), "WS2's WS1_READ");
    const stillHeld = async () => (await grantOf(b, 'WS1', 'read'))?.stamp === holder.stamp;

    expect((await call(`${b.baseUrl}/ws1/rates`)).status).toBe(200); // default: 5 readers may share WS1

    const set = await call<PermitsView>(`${b.baseUrl}/api/permits`, { name: 'WS1', mode: 'read', permits: 1 });
    expect(set.status).toBe(200);
    expect((await call(`${b.baseUrl}/ws1/rates`)).status).toBe(423); // WS2's job holds the only read permit
    expect((await call(`${a.baseUrl}/ws1/rates`)).status).toBe(423); // on the other instance too, cache or not

    const seenByA = await eventually(
      async () => {
        const view = (await call<PermitsView>(`${a.baseUrl}/api/permits`)).body;
        const ws1 = view.names.find((line) => line.name === 'WS1');
        return ws1?.inForce.read === 1 ? ws1 : undefined;
      },
      "instance A's permits cache to follow",
      2 * a.config.permitsRefreshIntervalMs + 500,
    );
    expect(seenByA.rows).toEqual({ read: 1, write: null });

    const reset = await call<PermitsView>(`${a.baseUrl}/api/permits`, { name: 'WS1', mode: 'read', permits: null });
    expect(reset.body.names.find((line) => line.name === 'WS1')?.inForce).toEqual({ read: 5, write: 1 });
    expect((await call(`${b.baseUrl}/ws1/rates`)).status).toBe(200);
    expect(await stillHeld()).toBe(true); // all of the above happened while WS2 held WS1_READ
    expect((await ws2).status).toBe(200);
  });

  it('rejects a bad permits row with 400 and changes nothing', async () => {
    const zero = await call<{ message: string }>(`${a.baseUrl}/api/permits`, { name: 'WS1', mode: 'read', permits: 0 });
    expect(zero.status).toBe(400);
    const badName = await call(`${a.baseUrl}/api/permits`, { name: 'WS1 ', mode: 'read', permits: 2 }); // a trailing space
    expect(badName.status).toBe(400);
    const badMode = await call(`${a.baseUrl}/api/permits`, { name: 'WS1', mode: 'both', permits: 2 });
    expect(badMode.status).toBe(400);
    expect(await db.query('SELECT * FROM locking_permissions')).toEqual([]);
  });
});
