import { LOCK_MIGRATIONS, LockLostError } from 'nestjs-db-locks';
import { runCli } from '../support/cli-process.js';
import { createLockApp, type LockApp } from '../support/lock-app.js';
import { createMysqlTestDatabase, describeOnMysql } from '../support/mysql-test-database.js';
import type { TestDatabase } from '../support/test-database.js';
import { until } from '../support/until.js';

const MIGRATION_NAMES = LOCK_MIGRATIONS.map((migration) => migration.name);

/** The built command line against MariaDB, with a `mysql://` (or `mariadb://`) URL, as an operator runs it. */
describeOnMysql('nestjs-db-locks (command line) on MySQL/MariaDB', () => {
  let db: TestDatabase;
  let holder: LockApp | undefined;
  beforeAll(async () => {
    db = await createMysqlTestDatabase({ migrate: false });
  });
  afterAll(async () => {
    await holder?.close();
    await db?.drop();
  });

  it('migrates, shows a grant, releases it by force (the holder is told), and shows the FORCED log row', async () => {
    const env = { DATABASE_URL: db.url.replace(/^mysql:/, 'mariadb:') };
    const pending = await runCli(['migrate', '--check'], env);
    expect(pending.code).toBe(1);
    expect(pending.stdout).toContain(`${MIGRATION_NAMES.length} lock migration(s) pending`);
    const applied = await runCli(['migrate'], env);
    expect(applied).toMatchObject({ code: 0, stderr: '' });
    expect(JSON.parse((await runCli(['migrate', '--check', '--json'], env)).stdout)).toEqual({
      applied: MIGRATION_NAMES,
      pending: [],
      ran: [],
    });

    holder = await createLockApp(db.url, { appId: 'cli-holder', leaseMs: 60_000, renewIntervalMs: 200 });
    const stamp = await holder.locks.tryLocks(['CLI_STUCK_WRITE', 'CLI_OTHER_READ']);
    const status = JSON.parse((await runCli(['status', '--json'], env)).stdout) as { grants: unknown[] };
    expect(status.grants).toEqual([
      expect.objectContaining({
        stamp,
        appId: 'cli-holder',
        locks: [
          { name: 'CLI_OTHER', mode: 'read' },
          { name: 'CLI_STUCK', mode: 'write' },
        ],
      }),
    ]);

    const signal = holder.locks.getSignal(stamp);
    const released = await runCli(['release', String(stamp), '--reason', 'stuck, ticket OPS-8'], env);
    expect(released).toMatchObject({ code: 0, stderr: '' });
    await until(() => signal.aborted, 5000);
    expect(signal.reason).toBeInstanceOf(LockLostError);
    const log = JSON.parse((await runCli(['log', '--stamp', String(stamp), '--json'], env)).stdout);
    expect(log).toEqual([
      expect.objectContaining({ stamp, status: 'FORCED', endReason: 'stuck, ticket OPS-8', endedBy: expect.stringMatching(/^cli:/) }),
    ]);
    expect(await holder.locks.tryLocks(['CLI_STUCK_WRITE'])).toBeGreaterThan(stamp);
  });

  it('refuses a URL of another database with a usage error (exit 2), before any connection', async () => {
    const run = await runCli(['status'], { DATABASE_URL: 'mssql://sa@127.0.0.1:1433/db' });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('postgres://, mysql:// or mariadb://');
  });
});
