import { fileURLToPath } from 'node:url';
import { readFileSync } from 'node:fs';
import { LOCK_MIGRATIONS, LockLostError } from 'nestjs-db-locks';
import { DataSource } from 'typeorm';
import { type CliRun, closedPort, runCli } from '../support/cli-process.js';
import { createLockApp, type LockApp } from '../support/lock-app.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { until } from '../support/until.js';

/**
 * The built command line (`node dist/cli/lock-cli.main.js`), run as a child process against a real database, as an
 * operator runs it: exit codes, tables, `--json`, and its effect on live instances.
 */
const MIGRATION_NAMES = LOCK_MIGRATIONS.map((migration) => migration.name);

/** One line on stderr: no stack trace, no dumped driver error. */
function expectOneLine(run: CliRun): void {
  expect(run.stderr.trimEnd().split('\n')).toHaveLength(1);
  expect(run.stderr).not.toMatch(/\n\s+at /);
}

describe('nestjs-db-locks migrate', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase({ migrate: false });
  });
  afterAll(() => db.drop());

  it('--check exits 1 on an unmigrated database, migrate applies every lock migration, then --check exits 0', async () => {
    const env = { DATABASE_URL: db.url };
    const before = await runCli(['migrate', '--check'], env);
    expect(before.code).toBe(1);
    expect(before.stdout).toContain(`${MIGRATION_NAMES.length} lock migration(s) pending`);
    expect(await db.query("SELECT to_regclass('locking') AS t")).toEqual([{ t: null }]); // --check applied nothing
    const missing = await runCli(['status'], env);
    expect(missing.code).toBe(3);
    expect(missing.stderr).toContain('the lock tables are missing');
    expect(missing.stderr).toContain('nestjs-db-locks migrate');
    expectOneLine(missing);

    const applied = await runCli(['migrate'], env);
    expect(applied).toMatchObject({ code: 0, stderr: '' });
    expect(applied.stdout).toContain(`Applied ${MIGRATION_NAMES.length} lock migration(s)`);
    for (const name of MIGRATION_NAMES) expect(applied.stdout).toContain(name);
    expect(await db.query("SELECT to_regclass('locking')::text AS t")).toEqual([{ t: 'locking' }]);

    const check = await runCli(['migrate', '--check', '--json'], env);
    expect(check.code).toBe(0);
    expect(JSON.parse(check.stdout)).toEqual({ applied: MIGRATION_NAMES, pending: [], ran: [] });
    const again = await runCli(['migrate'], env);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain('up to date');
  });
});

describe('nestjs-db-locks against live instances', () => {
  let db: TestDatabase;
  let holder: LockApp;
  let waiter: LockApp;
  let env: Record<string, string>;
  beforeAll(async () => {
    db = await createTestDatabase();
    env = { DATABASE_URL: db.url };
    // Renews often, so that a forced release reaches its signal within a fraction of a second.
    holder = await createLockApp(db.url, { appId: 'cli-holder', leaseMs: 60_000, renewIntervalMs: 200 });
    waiter = await createLockApp(db.url, { appId: 'cli-waiter' });
  });
  afterAll(async () => {
    await Promise.all([holder?.close(), waiter?.close()]);
    await db?.drop();
  });

  it('status shows a grant held by an instance, in the table and in --json; --name filters', async () => {
    const stamp = await holder.locks.tryLocks(['CLI_STATUS_WRITE', 'CLI_OTHER_READ']);
    expect(stamp).toBeGreaterThan(0);
    try {
      const text = await runCli(['status'], env);
      expect(text).toMatchObject({ code: 0, stderr: '' });
      const line = text.stdout.split('\n').find((l) => l.includes('cli-holder'));
      expect(line).toMatch(new RegExp(`^\\s*${stamp}\\s+cli-holder\\s+\\S.*CLI_OTHER R, CLI_STATUS W`));
      expect(text.stdout).toMatch(/^\s*STAMP\s+APP\s+INSTANCE\s+LOCKS\s+HELD FOR\s+LEASE LEFT$/m);

      const json = await runCli(['status', '--json'], env);
      expect(json.code).toBe(0);
      const status = JSON.parse(json.stdout) as { grants: Array<{ stamp: number; appId: string }>; log: unknown[] };
      expect(status.grants).toEqual([expect.objectContaining({ stamp, appId: 'cli-holder' })]);
      expect(status.log).toEqual([expect.objectContaining({ stamp, status: 'ACQUIRED' })]);

      const other = JSON.parse((await runCli(['status', '--json', '--name', 'NOT_HELD'], env)).stdout);
      expect(other.grants).toEqual([]);
    } finally {
      await holder.locks.releaseLocks(stamp);
    }
  });

  it('status lists a waiter while tryLocks waits', async () => {
    const stamp = await holder.locks.tryLocks(['CLI_WAIT_WRITE']);
    const began = Date.now();
    const waiting = waiter.locks.tryLocks(['CLI_WAIT_WRITE'], { waitMs: 600_000 }); // ends when the holder releases
    let listed: Array<{ appId: string; locks: unknown; givesUpAt?: string }> = [];
    await until(async () => {
      listed = JSON.parse((await runCli(['status', '--json', '--name', 'CLI_WAIT'], env)).stdout).waiters;
      return listed.length > 0;
    }, 15_000);
    expect(listed).toEqual([expect.objectContaining({ appId: 'cli-waiter', locks: [{ name: 'CLI_WAIT', mode: 'write' }] })]);
    const text = await runCli(['status', '--name', 'CLI_WAIT'], env);
    // The wait's own deadline (10 min after it began), not the registration row's heartbeat (3 s).
    const givesUpAt = Date.parse(listed[0]!.givesUpAt!);
    expect(givesUpAt).toBeGreaterThanOrEqual(began + 600_000);
    expect(givesUpAt).toBeLessThanOrEqual(Date.now() + 600_000);
    // Position 1 (the only waiter), and minutes left before it gives up.
    expect(text.stdout).toMatch(/Waiters \(1\)\n\s*POSITION\s+APP\s+LOCKS\s+WAITING FOR\s+GIVES UP IN\s+WAITER\n\s*1\s+cli-waiter\s+CLI_WAIT W\s+\S+ s\s+\d min( \d+ s)?\s/);
    await holder.locks.releaseLocks(stamp);
    const next = await waiting;
    expect(next).toBeGreaterThan(0);
    await waiter.locks.releaseLocks(next);
  });

  it('release frees a live grant: its signal fires LockLostError and the log shows FORCED with the reason', async () => {
    const stamp = await holder.locks.tryLocks(['CLI_STUCK_WRITE']);
    const signal = holder.locks.getSignal(stamp);
    const released = await runCli(['release', String(stamp), '--reason', 'stuck since 03:00, ticket OPS-7'], env);
    expect(released).toMatchObject({ code: 0, stderr: '' });
    expect(released.stdout).toContain(`Released stamp ${stamp} of cli-holder`);
    expect(released.stdout).toMatch(/Logged as FORCED by cli:\S+@\S+: stuck since 03:00, ticket OPS-7/);

    await until(() => signal.aborted, 5000);
    expect(signal.reason).toBeInstanceOf(LockLostError);
    expect(await holder.locks.tryLocks(['CLI_STUCK_WRITE'])).toBeGreaterThan(0); // free again, for anyone

    const log = JSON.parse((await runCli(['log', '--stamp', String(stamp), '--json'], env)).stdout);
    expect(log).toEqual([
      expect.objectContaining({
        stamp,
        status: 'FORCED',
        endReason: 'stuck since 03:00, ticket OPS-7',
        endedBy: expect.stringMatching(/^cli:/),
      }),
    ]);
    const text = await runCli(['log', '--since', '10m', '--name', 'CLI_STUCK'], env);
    expect(text.stdout).toMatch(new RegExp(`^\\s*${stamp}\\s+cli-holder\\s+CLI_STUCK W\\s+FORCED\\s.*stuck since 03:00`, 'm'));

    const again = await runCli(['release', String(stamp), '--reason', 'twice'], env);
    expect(again.code).toBe(1);
    expect(again.stdout).toBe('');
    expect(again.stderr).toContain(`No live grant has stamp ${stamp}`);
    expectOneLine(again);
  });

  it('release behind a business transaction that outlasts its timeout says truly whether it may still happen', async () => {
    const stamp = await holder.locks.tryLocks(['CLI_BLOCKED_WRITE']);
    let commit!: () => void;
    const committed = new Promise<void>((resolve) => (commit = resolve));
    let fenced!: () => void;
    const fencedP = new Promise<void>((resolve) => (fenced = resolve));
    // The holder's business transaction holds the grant's log row ("business done") until the command has given up.
    const business = holder.app.get(DataSource).transaction(async (manager) => {
      await holder.locks.markBusinessDone(stamp, manager);
      fenced();
      await committed;
    });
    await fencedP;
    const run = await runCli(['release', String(stamp), '--reason', 'stuck, ticket OPS-8'], env);
    commit();
    await business;
    expect(run.code).toBe(3);
    expect(run.stdout).toBe('');
    expectOneLine(run);
    const status = async () => (await db.query<{ status: string }>('SELECT status FROM locking_log WHERE stamp = $1', [stamp]))[0]?.status;
    if (run.stderr.includes('was not released')) {
      // Known: the server gave the statement up. The grant stays its holder's.
      expect(run.stderr).toContain('nothing changed');
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(await status()).toBe('BUSINESS_DONE');
      await holder.locks.releaseLocks(stamp);
    } else {
      // The client gave up first: the server may still run it. The operator is told so, and where to look.
      expect(run.stderr).toContain(`the release of stamp ${stamp} may still take effect`);
      expect(run.stderr).toContain(`nestjs-db-locks log --stamp ${stamp}`);
      await new Promise((resolve) => setTimeout(resolve, 300));
      if ((await status()) === 'BUSINESS_DONE') await holder.locks.releaseLocks(stamp);
    }
  }, 60_000);

  it('release of an unknown stamp exits 1 with one line on stderr', async () => {
    const run = await runCli(['release', '987654321', '--reason', 'cleanup', '--json'], env);
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expectOneLine(run);
  });

  it('log --since keeps only the grants of that period', async () => {
    const stamp = await holder.locks.tryLocks(['CLI_LOG_READ']);
    await holder.locks.releaseLocks(stamp);
    const recent = JSON.parse((await runCli(['log', '--since', '5m', '--json'], env)).stdout) as Array<{ stamp: number }>;
    expect(recent.map((entry) => entry.stamp)).toContain(stamp);
    const future = new Date(Date.now() + 3_600_000).toISOString();
    const none = await runCli(['log', '--since', future, '--json'], env);
    expect(none.code).toBe(0);
    expect(JSON.parse(none.stdout)).toEqual([]);
    expect((await runCli(['log', '--since', future], env)).stdout).toBe('No log row matches.\n');
  });

  it('permits set, list, unset round trip; unset of a missing row exits 1', async () => {
    const set = await runCli(['permits', 'set', 'CLI_P', 'read', '3'], env);
    expect(set).toMatchObject({ code: 0, stdout: 'CLI_P read permits: 3\n' });
    expect(await db.query("SELECT mode, permits FROM locking_permissions WHERE lock_name = 'CLI_P'")).toEqual([
      { mode: 'R', permits: 3 },
    ]);
    const list = JSON.parse((await runCli(['permits', 'list', '--json'], env)).stdout);
    expect(list).toContainEqual({ name: 'CLI_P', mode: 'read', permits: 3 });
    expect((await runCli(['permits', 'list'], env)).stdout).toMatch(/^CLI_P\s+read\s+3$/m);

    expect((await runCli(['permits', 'unset', 'CLI_P', 'read'], env)).code).toBe(0);
    expect(await db.query("SELECT * FROM locking_permissions WHERE lock_name = 'CLI_P'")).toEqual([]);
    const again = await runCli(['permits', 'unset', 'CLI_P', 'read'], env);
    expect(again.code).toBe(1);
    expectOneLine(again);
  });
});

describe('nestjs-db-locks usage and connection errors', () => {
  let unreachable: string;
  beforeAll(async () => {
    unreachable = `postgres://nobody:secret@127.0.0.1:${await closedPort()}/nothing`;
  });

  // Each would exit 3 if it tried the (unreachable) database: exit code 2 shows it refused before connecting.
  it.each([
    [['release', '12']], // no --reason
    [['release', 'twelve', '--reason', 'x']],
    [['release', '12', '--reason', '   ']],
    [['permits', 'set', 'CLI_P', 'read', '0']],
    [['permits', 'set', 'ends with a space ', 'read', '1']],
    [['permits', 'set', 'CLI_P', 'maybe', '1']],
    [['permits', 'unset', 'CLI_P']],
    [['log', '--since', 'yesterday']],
    [['log', '--limit', '-3']],
    [['status', '--bogus']],
    [['frobnicate']],
  ])('%j exits 2 without touching the database', async (args) => {
    const run = await runCli(args, { DATABASE_URL: unreachable });
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr).not.toContain('ECONNREFUSED');
    expect(run.stderr).not.toMatch(/\n\s+at /);
  });

  it('exits 2 when no database is given', async () => {
    const run = await runCli(['status']);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('DATABASE_URL');
    expectOneLine(run);
  });

  it('exits 3 fast with one line when the database is unreachable, without printing the password', async () => {
    for (const args of [['status'], ['migrate', '--check'], ['release', '5', '--reason', 'x', '--json']]) {
      const run = await runCli(args, { DATABASE_URL: unreachable });
      expect(run.code).toBe(3);
      expect(run.stdout).toBe('');
      expect(run.stderr).toMatch(/^nestjs-db-locks: database 127\.0\.0\.1:\d+\/nothing unreachable or failed/);
      expect(run.stderr).not.toContain('secret');
      expectOneLine(run);
      // No retry loop (@nestjs/typeorm would try 9 times, 3 s apart): Node.js start-up and one refused connection.
      expect(run.ms).toBeLessThan(15_000);
    }
  });

  it('a mysql:// URL without mysql2 installed says which package to install, with exit code 4', async () => {
    const preload = fileURLToPath(new URL('../support/without-mysql2.cjs', import.meta.url));
    const run = await runCli(['status'], {
      DATABASE_URL: `mysql://nobody:secret@127.0.0.1:${await closedPort()}/nothing`,
      NODE_OPTIONS: `--require ${preload}`,
    });
    expect(run.code).toBe(4);
    expect(run.stderr.trim()).toBe(
      'nestjs-db-locks: the mysql2 package is not installed: run `npm install mysql2` (the driver of mysql:// and mariadb:// URLs)',
    );
    expect(run.stderr).not.toContain('unreachable');
  });

  it('--help and --version exit 0', async () => {
    const help = await runCli(['--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('Exit codes:');
    expect(help.stdout.replace(/\s+/g, ' ')).toContain('in their PostgreSQL, MySQL or MariaDB database');
    expect(help.stdout).toMatch(/^ {2}4 {2}the database driver the URL needs is not installed/m);
    // The variables the command reads, each with the option it stands for.
    expect(help.stdout).toMatch(/^Environment variables \(an option given on the command line wins\):$/m);
    expect(help.stdout).toMatch(/^ {2}DATABASE_URL {7}the database, as --url: postgres:\/\/…, or mysql:\/\/… \/ mariadb:\/\/…/m);
    expect(help.stdout).toMatch(/^ {2}LOCK_SCHEMA {8}PostgreSQL: the schema of the lock tables, as --schema$/m);
    expect(help.stdout).toMatch(/^ {2}LOCK_TABLE_PREFIX {2}MySQL\/MariaDB: the prefix of the lock tables, as --table-prefix$/m);
    const migrate = await runCli(['migrate', '--help']);
    expect(migrate.stdout.replace(/\s+/g, ' ')).toContain(
      '--create-here create the lock tables in the chosen place even though another schema or table prefix of the database has them',
    );
    const version = await runCli(['--version']);
    const { version: expected } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8'));
    expect(version).toMatchObject({ code: 0, stdout: `${expected}\n` });
  });
});
