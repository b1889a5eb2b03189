import { setTimeout as sleep } from 'node:timers/promises';
import mysql from 'mysql2/promise';
import { LockFence, LockLostError, LockStoreError } from 'nestjs-db-locks';
import { createLockApp, type LockApp } from '../support/lock-app.js';
import { until } from '../support/until.js';
import { createGaleraDatabase, describeOnOwnGalera, galeraNode, type GaleraDatabase } from './support/galera.js';
import { ErrorTally, grantsNoHolderSaw, HolderWitness, logOverlaps } from './support/holders.js';

/** Concurrent callers per instance (the machine runs three mariadbd as well: kept small). */
const CALLERS = 4;
/** The instances' timing: short enough that grants lost in a fault are reaped, and the soak ends, in seconds. */
const TIMING = { leaseMs: 2000, renewIntervalMs: 300, reaperIntervalMs: 300 };
/** How long a caller waits in tryLocks: under the lease, so that a wait spans a fault's start or end. */
const WAIT_MS = 1500;
/** The one name everybody wants. */
const NAME = 'SOAK';
/** The phases of the soak, in order; grants are counted per phase and instance. */
const PHASES = ['warm-up', 'node 3 killed', 'node 3 back', 'node 2 isolated', 'node 2 healed', 'quiet'] as const;
type Phase = (typeof PHASES)[number];

/** Node `index`'s wsrep state, read on a connection of its own without causal reads (an isolated node answers too). */
async function wsrepState(url: string): Promise<Record<string, string> | undefined> {
  const connection = await mysql.createConnection({ uri: url, connectTimeout: 2000 }).catch(() => undefined);
  if (!connection) return undefined;
  try {
    const [rows] = await connection.query(
      `SHOW GLOBAL STATUS WHERE Variable_name IN ('wsrep_local_state_comment', 'wsrep_cluster_size', 'wsrep_cluster_status', 'wsrep_ready')`,
    );
    return Object.fromEntries((rows as { Variable_name: string; Value: string }[]).map((r) => [r.Variable_name, r.Value]));
  } catch {
    return undefined;
  } finally {
    await connection.end().catch(() => undefined);
  }
}

/** Resolves once every node is Synced in a Primary component of all of them. */
async function allSynced(db: GaleraDatabase): Promise<void> {
  const healthy = (s: Record<string, string> | undefined) =>
    s?.wsrep_local_state_comment === 'Synced' &&
    s.wsrep_cluster_status === 'Primary' &&
    s.wsrep_ready === 'ON' &&
    Number(s.wsrep_cluster_size) === db.urls.length;
  await until(async () => (await Promise.all(db.urls.map(wsrepState))).every(healthy), 60_000);
}

describeOnOwnGalera('Galera soak: one write lock across three nodes through kill -9, isolation and a quiet period (issue 49)', () => {
  let db: GaleraDatabase;
  const opened: LockApp[] = [];
  const pools: mysql.Pool[] = [];

  beforeAll(async () => {
    db = await createGaleraDatabase();
  });
  afterAll(async () => {
    // Whatever happened, the cluster is whole again for the specs after this one.
    await galeraNode(3, 'start').catch(() => undefined);
    await galeraNode(2, 'heal').catch(() => undefined);
    await Promise.all(opened.splice(0).map((app) => app.close().catch(() => undefined)));
    await Promise.all(pools.splice(0).map((pool) => pool.end().catch(() => undefined)));
    if (db) await allSynced(db);
    await db?.drop();
  });

  it('never grants the name twice, fences every commit exactly once, and every instance still grants after the faults', async () => {
    const table = 'soak_counter';
    await db.queryOn(1, `CREATE TABLE ${table} (id INT PRIMARY KEY, n INT NOT NULL) ENGINE=InnoDB`);
    await db.queryOn(1, `INSERT INTO ${table} VALUES (1, 0)`);
    await allSynced(db);

    const instances: { name: string; node: number; app: LockApp; pool: mysql.Pool; fence: LockFence }[] = [];
    for (const node of [1, 2, 3]) {
      const app = await createLockApp(db.urls[node - 1]!, { appId: `soak-${node}`, ...TIMING }, CALLERS + 2);
      opened.push(app);
      // The instance's business pool, on its own node (as a user's service would have).
      const pool = mysql.createPool({ uri: db.urls[node - 1]!, connectionLimit: CALLERS, connectTimeout: 3000 });
      pools.push(pool);
      instances.push({ name: `@${node}`, node, app, pool, fence: app.app.get(LockFence) });
    }

    const witness = new HolderWitness(1);
    const errors = new ErrorTally();
    const grants = Object.fromEntries(instances.map((i) => [i.name, Object.fromEntries(PHASES.map((p) => [p, 0]))])) as Record<
      string,
      Record<Phase, number>
    >;
    const timeouts = Object.fromEntries(instances.map((i) => [i.name, 0]));
    const fenced = { ok: 0, unknown: 0, lost: 0, rolledBack: 0, failedBeforeFence: 0 };
    let longestWindowMs = 0;
    let phase: Phase = 'warm-up';
    let stop = false;
    /**
     * A fault armed for a node: the next holder of that node's instance springs it between its UPDATE and its fence
     * (and goes on 300 ms later, well inside its lease), so that every fault lands on a holder mid-transaction.
     */
    let trap: { node: number; sprung: () => void } | undefined;
    const trapped: Record<string, string> = {};
    /** Errors per instance, by kind, with the phase each kind was first met in. */
    const errorsOf = Object.fromEntries(instances.map((i) => [i.name, {} as Record<string, string>]));
    const counted = Object.fromEntries(instances.map((i) => [i.name, {} as Record<string, number>]));
    const tally = (instance: { name: string }, error: unknown) => {
      errors.add(error);
      const err = error as { name?: string; code?: string; operation?: string };
      const kind = `${err?.name}${err?.code ? ` ${err.code}` : ''}${err?.operation ? ` in ${err.operation}` : ''}`;
      counted[instance.name]![kind] = (counted[instance.name]![kind] ?? 0) + 1;
      errorsOf[instance.name]![kind] ??= phase;
    };

    const caller = async (instance: (typeof instances)[number]) => {
      while (!stop) {
        let stamp: number;
        try {
          stamp = await instance.app.locks.tryLocks([`${NAME}_WRITE`], { waitMs: WAIT_MS });
        } catch (error) {
          tally(instance, error);
          await sleep(50);
          continue;
        }
        if (stamp === 0) {
          timeouts[instance.name]!++;
          continue;
        }
        grants[instance.name]![phase]++;
        witness.enter(stamp, instance.name);
        const entered = performance.now();
        let inWindow = true;
        const leave = () => {
          if (!inWindow) return;
          inWindow = false;
          witness.leave();
          longestWindowMs = Math.max(longestWindowMs, performance.now() - entered);
        };
        let connection: mysql.PoolConnection | undefined;
        let broken = false;
        let fencing = false;
        let trappedStamp = 0;
        try {
          const tx = await instance.pool.getConnection();
          connection = tx;
          await tx.query('BEGIN');
          const [rows] = await tx.query(`SELECT n FROM ${table} WHERE id = 1`);
          const n = Number((rows as { n: number }[])[0]!.n);
          await tx.query(`UPDATE ${table} SET n = ? WHERE id = 1`, [n + 1]);
          if (trap?.node === instance.node) {
            const sprung = trap.sprung;
            trap = undefined;
            sprung();
            await sleep(300);
            trappedStamp = stamp;
          }
          leave(); // the fence and COMMIT settle who wrote: the holder's own window ends here
          fencing = true;
          await instance.fence.fenceAndCommit(tx, stamp);
          fenced.ok++;
          if (trappedStamp) trapped[`${phase} ${stamp}`] = 'committed';
        } catch (error) {
          leave();
          tally(instance, error);
          if (trappedStamp) trapped[`${phase} ${stamp}`] = `${(error as Error).name}: ${(error as Error).message}`.slice(0, 300);
          if (!fencing) {
            fenced.failedBeforeFence++;
            broken = true;
            await connection?.query('ROLLBACK').then(
              () => (broken = false),
              () => undefined,
            );
          } else if (error instanceof LockStoreError && error.outcomeUnknown) {
            fenced.unknown++;
            broken = true;
          } else if (error instanceof LockLostError) {
            fenced.lost++;
          } else {
            fenced.rolledBack++;
          }
        } finally {
          if (connection && broken) connection.destroy();
          else connection?.release();
        }
        await instance.app.locks.releaseLocks(stamp).catch((error: unknown) => tally(instance, error));
        if (broken) await sleep(50);
      }
    };

    const started = performance.now();
    const timeline: string[] = [];
    const mark = (next: Phase) => {
      phase = next;
      timeline.push(`${Math.round((performance.now() - started) / 1000)}s ${next}`);
    };
    /** Arms a fault for `node` and runs it once one of its holders is mid-transaction (after 10 s anyway). */
    const onHolder = async (node: number, action: 'kill9' | 'isolate') => {
      const sprung = await Promise.race([
        new Promise<boolean>((resolve) => (trap = { node, sprung: () => resolve(true) })),
        sleep(10_000, false),
      ]);
      trap = undefined;
      timeline.push(`${Math.round((performance.now() - started) / 1000)}s ${action} ${node}${sprung ? ' on a holder' : ' (no holder came)'}`);
      await galeraNode(node, action);
    };
    const loops = instances.flatMap((instance) => Array.from({ length: CALLERS }, () => caller(instance)));
    const counters: number[] = [];
    try {
      await sleep(5000);
      // (1) kill -9 of node 3, its instance's connections fail; then its restart (it rejoins by IST).
      await onHolder(3, 'kill9');
      mark('node 3 killed');
      await sleep(5000);
      await galeraNode(3, 'start');
      mark('node 3 back');
      await sleep(4000);
      // (2) node 2 cut off the cluster for 10 s: its instance gets 1047 meanwhile, its grants are lost at lease end.
      await onHolder(2, 'isolate');
      mark('node 2 isolated');
      await sleep(10_000);
      await galeraNode(2, 'heal');
      mark('node 2 healed');
      await sleep(4000);
      // (3) the quiet period: every instance must be granting again.
      mark('quiet');
      await sleep(12_000);
    } finally {
      stop = true;
      await Promise.all(loops);
    }
    timeline.push(`${Math.round((performance.now() - started) / 1000)}s stopped`);

    await allSynced(db);
    const log = await logOverlaps(db, NAME, 1);
    const unseen = grantsNoHolderSaw(log, witness);
    const inversions = witness.stampInversions();
    for (let node = 1; node <= db.urls.length; node++) {
      const [row] = await db.queryOn<{ n: number }>(node, `SELECT n FROM ${table} WHERE id = 1`);
      counters.push(Number(row!.n));
    }
    await Promise.all(opened.splice(0).map((app) => app.close()));
    await allSynced(db);
    const leftRows = [];
    for (let node = 1; node <= db.urls.length; node++) {
      const [row] = await db.queryOn<{ n: number }>(node, 'SELECT COUNT(*) AS n FROM locking');
      leftRows.push(Number(row!.n));
    }
    const [waiters] = await db.queryOn<{ n: number }>(1, 'SELECT COUNT(*) AS n FROM locking_waiters');

    const total = Object.fromEntries(instances.map((i) => [i.name, PHASES.reduce((sum, p) => sum + grants[i.name]![p], 0)]));
    const quiet = Object.fromEntries(instances.map((i) => [i.name, grants[i.name]!.quiet]));
    console.log(
      `galera soak: ${Math.round((performance.now() - started) / 1000)}s; grants ${JSON.stringify(total)} (quiet ${JSON.stringify(quiet)}); ` +
        `fenced ok ${fenced.ok}, unknown ${fenced.unknown}, lost ${fenced.lost}, other fence/commit failures ${fenced.rolledBack}, failed before the fence ${fenced.failedBeforeFence}; ` +
        `counter ${JSON.stringify(counters)}; errors ${errors.total} ${JSON.stringify(errors.byKind())}; timeouts ${JSON.stringify(timeouts)}; ` +
        `witness max ${witness.max} (longest window ${Math.round(longestWindowMs)} ms); log grants ${log.grants}, overlapping ${log.beyond}; ` +
        `grants no holder saw ${unseen.length}; stamp inversions ${inversions.length}; lock rows left ${JSON.stringify(leftRows)}, waiters left ${Number(waiters?.n)}`,
    );
    process.stderr.write(
      `galera soak detail: ${JSON.stringify({ timeline, trapped, errorsByInstance: counted, firstSeenIn: errorsOf, grants, errors: errors.list(), unseen: unseen.slice(0, 10), inversions: inversions.slice(0, 10) })}\n`,
    );

    expect({
      holdersAtOnceBeyondOne: witness.breaches,
      logGrantsOverlapping: log.beyond,
      countersAgree: counters.every((c) => c === counters[0]),
      counterWithinOkAndUnknown: counters[0]! >= fenced.ok && counters[0]! <= fenced.ok + fenced.unknown,
      lockRowsLeft: leftRows,
    }).toEqual({
      holdersAtOnceBeyondOne: 0,
      logGrantsOverlapping: 0,
      countersAgree: true,
      counterWithinOkAndUnknown: true,
      lockRowsLeft: leftRows.map(() => 0),
    });
    // Every instance grants again once the faults are over, those on the killed and the isolated node included.
    for (const count of Object.values(quiet)) expect(count).toBeGreaterThan(0);
    // The soak did fenced work on every node before and after the faults.
    expect(fenced.ok).toBeGreaterThan(50);
  }, 180_000);
});
