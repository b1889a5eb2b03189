import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { DIALECTS, namesOf } from '../support/dialects.js';
import type { TestDatabase } from '../support/test-database.js';
import { createHitsTable, describeWithFaketime, hitsOf, type Replica, startReplica, stopReplicas } from './support/job-fleet.js';

/** Seconds the fleet runs. */
const RUN_S = 6;

/**
 * A once-per-tick cron on three replicas: one whose clock is 600 ms behind, one on time, one 600 ms ahead (the bound
 * of a one-second schedule is a third of it).
 */
for (const dialect of DIALECTS) {
  describeWithFaketime(dialect)(`A fleet with clocks 600 ms off, on ${dialect.name}`, () => {
    let db: TestDatabase;
    const replicas: Replica[] = [];
    const logs = new Map<string, string[]>();

    /** Reads the replica's `log` events (LOG_JSON=1) of level `warn` into `logs`. */
    const collect = (replica: Replica): void => {
      const lines: string[] = [];
      logs.set(replica.appId, lines);
      createInterface({ input: replica.child.stdout! }).on('line', (line) => {
        const event = JSON.parse(line) as { event?: string; level?: string; message?: string };
        if (event.event === 'log' && event.level === 'warn') lines.push(String(event.message));
      });
    };

    beforeAll(async () => {
      db = await dialect.createDatabase();
      await createHitsTable(db, dialect);
      const env = { JOBS: 'FleetCron', LOG_JSON: '1', LOG_LEVELS: 'warn' };
      // The replica behind starts last: the others have claimed every tick by the time it comes to it, so it never runs.
      for (const [appId, skew] of [
        ['replica-ahead', 0.6],
        ['replica-on-time', 0],
        ['replica-behind', -0.6],
      ] as const) {
        const replica = await startReplica(db.url, appId, skew, env);
        collect(replica);
        replicas.push(replica);
      }
      await sleep(RUN_S * 1000);
      await stopReplicas(replicas);
    }, 60_000);

    afterAll(async () => {
      await stopReplicas(replicas);
      await db?.drop();
    });

    it('the replica whose clock is off warns about it, behind as well as ahead, whether it runs the ticks or not', () => {
      const skewWarning = (direction: string) =>
        new RegExp(`^FleetCron\\.run: this replica's clock is \\d+ ms ${direction} the database's, beyond the ±333 ms`);
      expect(logs.get('replica-behind')).toEqual([expect.stringMatching(skewWarning('behind'))]);
      expect(logs.get('replica-ahead')).toEqual([expect.stringMatching(skewWarning('ahead of'))]);
      expect(logs.get('replica-on-time')).toEqual([]);
    });

    it('takes the locks only to run: a replica that finds the tick run elsewhere takes none (one grant per run)', async () => {
      const runs = (await hitsOf(db, 'fleet-cron')).filter((hit) => hit.phase === 'start');
      expect(runs.length).toBeGreaterThanOrEqual(RUN_S - 2);
      const grants = (await db.query<{ stamp: string; lock_names: unknown }>('SELECT stamp, lock_names FROM locking_log')).filter((row) =>
        namesOf(row.lock_names).includes('FLEET_CRON'),
      );
      const runStamps = (await db.query<{ stamp: string }>("SELECT stamp FROM locking_job_run WHERE job = 'FleetCron.run' AND stamp IS NOT NULL")).map(
        (row) => String(row.stamp),
      );
      // Every grant of the job's lock is a run's: the lock log has one row per run, not one per replica and tick.
      expect(grants.map((row) => String(row.stamp)).sort()).toEqual(runStamps.sort());
      expect(grants).toHaveLength(runs.length);
    });
  });
}
