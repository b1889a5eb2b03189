import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { DataSource } from 'typeorm';
import { LockAdminService, type LockJobInfo, type LockJobRun } from 'nestjs-db-locks';
import { DIALECTS } from '../support/dialects.js';
import type { RestartableServer } from '../support/restartable-server.js';
import { until } from '../support/until.js';
import { type Replica, startReplica, stopReplicas } from './support/job-fleet.js';

/** How long the job runs once it has started: it ends while the database is away. */
const RUN_MS = 3000;
/** How long the database is away, from the moment the test stops it. */
const OUTAGE_MS = 5000;
const JOB = 'OutageTimeout.run@replica-a';

/** A run that ends while the database is away (a server of the test's own, stopped and started again). */
for (const dialect of DIALECTS) {
  dialect.describeRestartable(`A job whose run ends while the database is away, on ${dialect.name}`, () => {
    let server: RestartableServer;
    let replica: Replica | undefined;
    let adminSource: DataSource | undefined;
    let run: LockJobRun | undefined;
    let job: Omit<LockJobInfo, 'lastRuns'> | undefined;
    let backAt = 0;

    beforeAll(async () => {
      server = await dialect.startRestartable();
      await server.tryQuery(
        dialect.name === 'MariaDB'
          ? 'CREATE TABLE job_hits (id bigint AUTO_INCREMENT PRIMARY KEY, job varchar(100) NOT NULL, app_id varchar(100) NOT NULL, phase varchar(10) NOT NULL, local_ms bigint NOT NULL, db_ms bigint NOT NULL)'
          : 'CREATE TABLE job_hits (id bigserial PRIMARY KEY, job varchar(100) NOT NULL, app_id varchar(100) NOT NULL, phase varchar(10) NOT NULL, local_ms bigint NOT NULL, db_ms bigint NOT NULL)',
      );
      replica = await startReplica(server.url, 'replica-a', 0, {
        JOBS: 'OutageTimeout',
        TIMEOUT_MS: '500',
        OUTAGE_RUN_MS: String(RUN_MS),
        LOG_LEVELS: '',
      });
      await replica.next('running');
      const stoppedAt = performance.now();
      await server.stop();
      // The run ends RUN_MS after it started, while the server is down.
      expect(performance.now() - stoppedAt).toBeLessThan(RUN_MS);
      await sleep(OUTAGE_MS - (performance.now() - stoppedAt));
      await server.start();
      backAt = performance.now();
      adminSource = new DataSource(
        dialect.name === 'MariaDB' ? { type: 'mariadb', url: server.url, timezone: 'Z' } : { type: 'postgres', url: server.url },
      );
      await adminSource.initialize();
      const admin = LockAdminService.create(adminSource);
      // The end is written once the database is back (or never, and the test says what it found).
      await until(async () => {
        [run] = await admin.getJobRuns({ job: JOB, limit: 10 });
        return run?.outcome === 'succeeded';
      }, 20_000).catch(() => undefined);
      job = (await admin.getJobs({ runs: 0 })).find((candidate) => candidate.job === JOB);
    }, 120_000);

    afterAll(async () => {
      await server?.start();
      await stopReplicas(replica ? [replica] : []);
      await adminSource?.destroy();
      await server?.destroy();
    });

    it('keeps the outcome and writes it when the database is back: the run succeeded, last success at its end', () => {
      expect(run).toMatchObject({ job: JOB, outcome: 'succeeded', appId: 'replica-a', error: null });
      expect(run!.durationMs).toBeGreaterThanOrEqual(RUN_MS - 50);
      expect(run!.durationMs).toBeLessThan(RUN_MS + 1000);
      // The success is dated at the run's end (database clock), not at the late write, seconds later.
      const endedAt = run!.startedAt!.getTime() + run!.durationMs!;
      expect(job!.lastSucceededAt).not.toBeNull();
      expect(Math.abs(job!.lastSucceededAt!.getTime() - endedAt)).toBeLessThan(1000);
      expect(performance.now() - backAt).toBeLessThan(20_000);
    });
  });
}
