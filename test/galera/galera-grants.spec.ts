import { existsSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import mysql from 'mysql2/promise';
import { AppIdInUseError, LockFence, LockLostError, type LockSpec } from 'nestjs-db-locks';
import { startHolder, type HolderProcess } from '../support/holder-process.js';
import { createLockApp, type LockApp, type TestLockOptions } from '../support/lock-app.js';
import { createGaleraDatabase, describeOnGalera, type GaleraDatabase } from './support/galera.js';
import { ErrorTally, grantsNoHolderSaw, HolderWitness, logOverlaps } from './support/holders.js';

/** Concurrent callers per application. */
const CALLERS = 8;
/**
 * How the callers ask: `waiting` (tryLocks with a wait long enough that a fair engine never times out here: they queue
 * as waiters, served in registration order across the fleet) or `not waiting` (tryLocks without a wait, asked again
 * at once when refused: nobody queues, so grants on different nodes race each other).
 */
const CALLER_MODES = [
  { mode: 'waiting', waitMs: 20_000 },
  { mode: 'not waiting', waitMs: 0 },
] as const;
/** The lease of the twin tests' instances: the designed bound of an instance claim left by a life that ended. */
const TWIN_LEASE_MS = 3000;

/**
 * CALLERS loops per application, each taking `spec` (waiting up to `waitMs`), running `hold` while it holds it, and
 * releasing it, until `total` grants were made across all of them. `timeouts`: waits that ended without the lock;
 * `refusals`: tries without a wait that found it taken.
 */
async function contend(
  apps: readonly { name: string; app: LockApp }[],
  spec: LockSpec,
  waitMs: number,
  total: number,
  hold: (stamp: number, app: { name: string; app: LockApp }) => Promise<void>,
  errors: ErrorTally,
): Promise<{ grants: number; timeouts: number; refusals: number }> {
  let grants = 0;
  let timeouts = 0;
  let refusals = 0;
  const caller = async (entry: { name: string; app: LockApp }) => {
    while (grants < total && errors.total < 200) {
      let stamp = 0;
      try {
        stamp = await entry.app.locks.tryLocks([spec], { waitMs });
      } catch (error) {
        errors.add(error);
        continue;
      }
      if (stamp === 0 && waitMs > 0) {
        timeouts++;
        continue;
      }
      if (stamp === 0) {
        refusals++;
        await sleep(Math.random() < 0.5 ? 0 : 1);
        continue;
      }
      grants++;
      try {
        await hold(stamp, entry);
      } finally {
        await entry.app.locks.releaseLocks(stamp).catch((error: unknown) => errors.add(error));
      }
    }
  };
  await Promise.all(apps.flatMap((entry) => Array.from({ length: CALLERS }, () => caller(entry))));
  return { grants, timeouts, refusals };
}

/** What a start-up attempt came to: the error's class, or `started`. */
const outcomeOf = (result: LockApp | Error): string => (result instanceof Error ? result.constructor.name : 'started');

/** A short hold: the other nodes' callers get a window to be granted the same name if the engine lets them. */
const briefly = () => sleep(Math.floor(Math.random() * 3));

/**
 * The hold of a name with two permits: long enough (5–10 ms) that two holders overlap even when each hand-off to
 * another node's waiter takes a poll (20 ms), so that the second permit is seen in use.
 */
const aWhile = () => sleep(5 + Math.floor(Math.random() * 6));

describeOnGalera('Grants across the nodes of a Galera cluster (issue 49)', () => {
  let db: GaleraDatabase;
  const opened: LockApp[] = [];
  const holders: HolderProcess[] = [];
  const open = async (node: number, options: TestLockOptions, poolSize = CALLERS + 2): Promise<LockApp> => {
    const app = await createLockApp(db.urls[node - 1]!, options, poolSize);
    opened.push(app);
    return app;
  };
  /** Starts an instance, or answers why it could not start (an instance that started is closed after the test). */
  const tryOpen = (node: number, options: TestLockOptions): Promise<LockApp | Error> =>
    open(node, options, 2).catch((error: unknown) => error as Error);

  beforeAll(async () => {
    db = await createGaleraDatabase();
  });
  afterEach(async () => {
    await Promise.all(holders.splice(0).map((holder) => holder.kill()));
    await Promise.all(opened.splice(0).map((app) => app.close().catch(() => undefined)));
  });
  afterAll(async () => {
    await db?.drop();
  });

  for (const [m, { mode, waitMs }] of CALLER_MODES.entries()) {
    it(`(a) grants one write lock to one holder at a time across three nodes, stamps growing in grant order (callers ${mode})`, async () => {
      const apps = [
        { name: 'A@1', app: await open(1, { appId: `grants-${m}-a` }) },
        { name: 'B@2', app: await open(2, { appId: `grants-${m}-b` }) },
        { name: 'C@3', app: await open(3, { appId: `grants-${m}-c` }) },
      ];
      const name = `GX${m}`;
      const witness = new HolderWitness(1);
      const errors = new ErrorTally();
      const { grants, timeouts, refusals } = await contend(
        apps,
        `${name}_WRITE`,
        waitMs,
        1000,
        async (stamp, entry) => {
          witness.enter(stamp, entry.name);
          await briefly();
          witness.leave();
        },
        errors,
      );
      const log = await logOverlaps(db, name, 1);
      const unseen = grantsNoHolderSaw(log, witness);
      const perApp = Object.fromEntries(apps.map((app) => [app.name, witness.entries.filter((e) => e.app === app.name).length]));
      const inversions = witness.stampInversions();
      process.stderr.write(
        `(a, ${mode}) ${JSON.stringify({ grants, timeouts, refusals, perApp, witness: { max: witness.max, breaches: witness.breaches }, inversions: inversions.length, log: { ...log, rows: log.rows.length }, unseen, errors: errors.list() })}\n`,
      );
      expect({
        holdersAtOnceBeyondOne: witness.breaches,
        logGrantsOverlapping: log.beyond,
        stampInversions: inversions.slice(0, 5),
        logGrantsNoHolderSaw: unseen.slice(0, 5),
        errors: errors.list(),
        timeouts,
      }).toEqual({ holdersAtOnceBeyondOne: 0, logGrantsOverlapping: 0, stampInversions: [], logGrantsNoHolderSaw: [], errors: [], timeouts: 0 });
      expect(grants).toBeGreaterThanOrEqual(1000);
      expect(log.grants).toBe(grants);
      // Every node took part: the test judged grants made on different nodes against each other.
      for (const count of Object.values(perApp)) expect(count).toBeGreaterThan(50);
    }, 300_000);
  }

  for (const [m, { mode, waitMs }] of CALLER_MODES.entries()) {
    it(`(b) fences exactly: a counter each holder reads and writes on its own node ends at the number of grants (callers ${mode})`, async () => {
      const table = `galera_counter_${m}`;
      await db.queryOn(1, `CREATE TABLE ${table} (id INT PRIMARY KEY, n INT NOT NULL)`);
      await db.queryOn(1, `INSERT INTO ${table} VALUES (1, 0)`);
      const apps = [
        { name: 'A@1', app: await open(1, { appId: `fence-${m}-a` }) },
        { name: 'B@2', app: await open(2, { appId: `fence-${m}-b` }) },
      ];
      // Each application's own business pool, on its own node (as a user's service would have).
      const pools = new Map(apps.map(({ name }, i) => [name, mysql.createPool({ uri: db.urls[i]!, connectionLimit: CALLERS })]));
      const witness = new HolderWitness(1);
      const errors = new ErrorTally();
      const outcomes = { committed: 0, lost: 0, failed: 0 };
      try {
        const { grants, timeouts, refusals } = await contend(
          apps,
          `FENCED${m}_WRITE`,
          waitMs,
          300,
          async (stamp, entry) => {
            witness.enter(stamp, entry.name);
            const fence = entry.app.app.get(LockFence);
            const connection = await pools.get(entry.name)!.getConnection();
            let inWindow = true;
            try {
              await connection.query('BEGIN');
              const [rows] = await connection.query(`SELECT n FROM ${table} WHERE id = 1`);
              const n = Number((rows as { n: number }[])[0]!.n);
              await connection.query(`UPDATE ${table} SET n = ? WHERE id = 1`, [n + 1]);
              witness.leave(); // the fence and COMMIT settle who wrote: the holder's own window ends here
              inWindow = false;
              await fence.fenceAndCommit(connection, stamp);
              outcomes.committed++;
            } catch (error) {
              if (inWindow) witness.leave();
              if (error instanceof LockLostError) outcomes.lost++;
              else outcomes.failed++;
              errors.add(error);
              await connection.query('ROLLBACK').catch(() => undefined);
            } finally {
              connection.release();
            }
          },
          errors,
        );
        const counters = [];
        for (let node = 1; node <= db.urls.length; node++) {
          const [row] = await db.queryOn<{ n: number }>(node, `SELECT n FROM ${table} WHERE id = 1`);
          counters.push(Number(row!.n));
        }
        process.stderr.write(
          `(b, ${mode}) ${JSON.stringify({ grants, timeouts, refusals, outcomes, counters, witness: { max: witness.max, breaches: witness.breaches }, errors: errors.list() })}\n`,
        );
        expect({
          counterOnEachNode: counters,
          committed: outcomes.committed,
          lost: outcomes.lost,
          failed: outcomes.failed,
          holdersAtOnceBeyondOne: witness.breaches,
          errors: errors.list(),
        }).toEqual({
          counterOnEachNode: counters.map(() => grants),
          committed: grants,
          lost: 0,
          failed: 0,
          holdersAtOnceBeyondOne: 0,
          errors: [],
        });
      } finally {
        await Promise.all([...pools.values()].map((pool) => pool.end()));
      }
    }, 300_000);
  }

  for (const [m, { mode, waitMs }] of CALLER_MODES.entries()) {
    it(`(c) never has more holders than the name’s two write permits, across nodes (callers ${mode})`, async () => {
      const apps = [
        { name: 'A@1', app: await open(1, { appId: `permits-${m}-a` }) },
        { name: 'B@2', app: await open(2, { appId: `permits-${m}-b` }) },
        { name: 'C@3', app: await open(3, { appId: `permits-${m}-c` }) },
      ];
      const name = `PERMIT2_${m}`;
      await apps[0]!.app.locks.setLockPermits(name, 'write', 2);
      for (const [index, { app }] of apps.entries()) {
        await db.queryOn(index + 1, 'SELECT 1'); // the node applied the permits row
        await app.locks.refreshLockPermits();
        expect(app.locks.getLockPermits(name).write).toBe(2);
      }
      const witness = new HolderWitness(2);
      const errors = new ErrorTally();
      const { grants, timeouts, refusals } = await contend(
        apps,
        `${name}_WRITE`,
        waitMs,
        600,
        async (stamp, entry) => {
          witness.enter(stamp, entry.name);
          await aWhile();
          witness.leave();
        },
        errors,
      );
      const log = await logOverlaps(db, name, 2);
      const unseen = grantsNoHolderSaw(log, witness);
      process.stderr.write(
        `(c, ${mode}) ${JSON.stringify({ grants, timeouts, refusals, witness: { max: witness.max, breaches: witness.breaches }, log: { ...log, rows: log.rows.length }, unseen, errors: errors.list() })}\n`,
      );
      expect({
        holdersAtOnceBeyondTwo: witness.breaches,
        logGrantsBeyondTwo: log.beyond,
        logGrantsNoHolderSaw: unseen.slice(0, 5),
        errors: errors.list(),
        timeouts,
      }).toEqual({ holdersAtOnceBeyondTwo: 0, logGrantsBeyondTwo: 0, logGrantsNoHolderSaw: [], errors: [], timeouts: 0 });
      expect(witness.max).toBe(2); // the second permit was used
      expect(log.grants).toBe(grants);
    }, 300_000);
  }

  describe('(d) the twin: one live instance per appId across the nodes', () => {
    it('refuses a second instance of a live appId on another node, and the first keeps granting', async () => {
      const first = await open(1, { appId: 'twin', leaseMs: TWIN_LEASE_MS });
      const onNode2 = await tryOpen(2, { appId: 'twin', leaseMs: TWIN_LEASE_MS });
      const onNode3 = await tryOpen(3, { appId: 'twin', leaseMs: TWIN_LEASE_MS });
      expect([onNode2, onNode3].map(outcomeOf)).toEqual(['AppIdInUseError', 'AppIdInUseError']);
      const stamp = await first.locks.tryLocks(['TWIN_WRITE']);
      expect(stamp).toBeGreaterThan(0);
      await first.locks.releaseLocks(stamp);
    }, 120_000);

    it('starts the appId on another node once the first instance closed, within the lease', async () => {
      const first = await open(1, { appId: 'twin-closed', leaseMs: TWIN_LEASE_MS });
      const stamp = await first.locks.tryLocks(['TWIN_CLOSED_WRITE']);
      expect(stamp).toBeGreaterThan(0);
      await first.locks.releaseLocks(stamp);
      await first.close();
      const { app, waitedMs, refusals } = await startWithin(2, 'twin-closed', TWIN_LEASE_MS + 5000);
      process.stderr.write(`(d) after close: started on node 2 after ${waitedMs} ms (${refusals} refusals)\n`);
      expect(app).toBeDefined();
      expect(waitedMs).toBeLessThanOrEqual(TWIN_LEASE_MS + 1000);
      expect(await app!.locks.tryLocks(['TWIN_CLOSED_WRITE'])).toBeGreaterThan(stamp);
    }, 120_000);

    it('starts the appId on another node after its holder process was killed, within the lease, and gets its locks', async () => {
      if (!existsSync('dist/index.js')) throw new Error('the holder child runs the built package: npm run build first');
      const holder = startHolder({
        DATABASE_URL: db.urls[0]!,
        APP_ID: 'twin-killed',
        LEASE_MS: String(TWIN_LEASE_MS),
        LOCKS: 'TWIN_KILLED_WRITE',
      });
      holders.push(holder);
      const { stamp } = (await holder.next('held')) as { stamp: number };
      expect(stamp).toBeGreaterThan(0);
      const live = await tryOpen(2, { appId: 'twin-killed', leaseMs: TWIN_LEASE_MS });
      expect(outcomeOf(live)).toBe('AppIdInUseError');
      await holder.kill();
      const { app, waitedMs, refusals } = await startWithin(2, 'twin-killed', TWIN_LEASE_MS + 5000);
      expect(app).toBeDefined();
      const asked = performance.now();
      const again = await app!.locks.tryLocks(['TWIN_KILLED_WRITE'], { waitMs: TWIN_LEASE_MS + 5000 });
      const lockWaitMs = Math.round(performance.now() - asked);
      process.stderr.write(`(d) after kill -9: started on node 2 after ${waitedMs} ms (${refusals} refusals), its lock after ${lockWaitMs} ms more\n`);
      expect(waitedMs).toBeLessThanOrEqual(TWIN_LEASE_MS + 1000);
      expect(again).toBeGreaterThan(stamp);
      expect(waitedMs + lockWaitMs).toBeLessThanOrEqual(TWIN_LEASE_MS + 1000);
    }, 120_000);

    /** Starts `appId` on `node`, again every 100 ms while refused as a twin, for up to `limitMs`. */
    async function startWithin(node: number, appId: string, limitMs: number) {
      const started = performance.now();
      let refusals = 0;
      for (;;) {
        const result = await tryOpen(node, { appId, leaseMs: TWIN_LEASE_MS });
        const waitedMs = Math.round(performance.now() - started);
        if (!(result instanceof Error)) return { app: result, waitedMs, refusals };
        if (!(result instanceof AppIdInUseError)) throw result;
        refusals++;
        if (waitedMs > limitMs) return { app: undefined, waitedMs, refusals };
        await sleep(100);
      }
    }
  });
});
