import { DataSource } from 'typeorm';
import { LeaderService, LOCK_MIGRATIONS, lockMigrations, type LockTablesOptions } from 'nestjs-db-locks';
import type { CliRun } from '../support/cli-process.js';
import { runCli } from '../support/cli-process.js';
import { DIALECTS } from '../support/dialects.js';
import { createLockApp, type LockApp } from '../support/lock-app.js';
import type { TestDatabase } from '../support/test-database.js';
import { until } from '../support/until.js';

/**
 * The built command line with `--schema` (PostgreSQL) / `--table-prefix` (MySQL/MariaDB), or `LOCK_SCHEMA` /
 * `LOCK_TABLE_PREFIX`: it migrates, reads and frees the locks of that place, and of no other.
 */
for (const dialect of DIALECTS) {
  const postgres = dialect.name === 'PostgreSQL';
  const place: LockTablesOptions = postgres ? { schema: 'ops_locks' } : { tablePrefix: 'ops_' };
  const flag = postgres ? ['--schema', 'ops_locks'] : ['--table-prefix', 'ops_'];
  const names = LOCK_MIGRATIONS.map((migration) => (postgres ? `ops_locks.${migration.name}` : `ops_${migration.name}`));

  dialect.describe(`nestjs-db-locks ${flag.join(' ')} (${dialect.name})`, () => {
    let db: TestDatabase;
    let app: LockApp | undefined;
    let env: Record<string, string>;
    beforeAll(async () => {
      db = await dialect.createDatabase({ migrate: false });
      env = { DATABASE_URL: db.url };
    });
    afterAll(async () => {
      await app?.close();
      await db?.drop();
    });

    it('migrate applies the migrations of the place only, under its names; status, leaders, log and release act there', async () => {
      const before = await runCli(['migrate', '--check', ...flag], env);
      expect(before.code).toBe(1);
      for (const name of names) expect(before.stdout).toContain(name);
      const applied = await runCli(['migrate', ...flag], env);
      expect(applied).toMatchObject({ code: 0, stderr: '' });
      expect(applied.stdout).toContain(`Applied ${names.length} lock migration(s)`);
      const check = await runCli(['migrate', '--check', '--json', ...flag], env);
      expect(check.code).toBe(0);
      expect(JSON.parse(check.stdout)).toEqual({ applied: names, pending: [], ran: [] });
      // The default place is another place: the command line says where the lock tables are, and, told to create a
      // set there anyway, that all its migrations are to run.
      const defaults = await runCli(['migrate', '--check', '--json'], env);
      expect(defaults).toMatchObject({ code: 3, stdout: '' });
      expect(defaults.stderr).toContain(postgres ? 'add --schema ops_locks' : 'add --table-prefix ops_');
      const anyway = await runCli(['migrate', '--check', '--json', '--create-here'], env);
      expect(anyway.code).toBe(1);
      expect(JSON.parse(anyway.stdout).pending).toEqual(LOCK_MIGRATIONS.map((migration) => migration.name));

      app = await createLockApp(db.url, { appId: 'ops-holder', ...place });
      const stamp = await app.locks.tryLocks(['ledger_WRITE']);
      expect(stamp).toBeGreaterThan(0);
      const status = await runCli(['status', '--json', ...flag], env);
      expect(status.code).toBe(0);
      expect(JSON.parse(status.stdout).grants).toEqual([expect.objectContaining({ stamp, appId: 'ops-holder' })]);
      const viaEnv = await runCli(['status', '--json'], { ...env, ...(postgres ? { LOCK_SCHEMA: 'ops_locks' } : { LOCK_TABLE_PREFIX: 'ops_' }) });
      expect(JSON.parse(viaEnv.stdout).grants).toEqual([expect.objectContaining({ stamp })]);
      const elsewhere = await runCli(['status', '--json'], env);
      expect(elsewhere.code).toBe(3); // the default place has no tables: it says where they are
      expect(elsewhere.stderr).toContain(postgres ? 'add --schema ops_locks' : 'add --table-prefix ops_');

      // The leaders of the place: a role led by the instance there, with its term.
      const leaders = app.app.get(LeaderService);
      leaders.campaign('ops-report', (signal) => new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve())));
      await until(() => leaders.isLeader('ops-report'));
      const led = await runCli(['leaders', '--json', ...flag], env);
      expect(led).toMatchObject({ code: 0, stderr: '' });
      expect(JSON.parse(led.stdout)).toEqual([
        expect.objectContaining({ role: 'ops-report', leader: expect.objectContaining({ appId: 'ops-holder', term: leaders.term('ops-report')!.token }) }),
      ]);
      expect((await runCli(['leaders', '--json'], env)).code).toBe(3); // not in the default place
      await leaders.resign('ops-report');

      const released = await runCli(['release', String(stamp), '--reason', 'ops drill', ...flag], env);
      expect(released).toMatchObject({ code: 0, stderr: '' });
      const log = JSON.parse((await runCli(['log', '--stamp', String(stamp), '--json', ...flag], env)).stdout);
      expect(log).toEqual([expect.objectContaining({ stamp, status: 'FORCED', endReason: 'ops drill' })]);
    }, 180_000); // ten runs of the command line, each a Node process: seconds apiece on a loaded machine

    it('refuses a bad place, or the option of the other dialect, with a usage error before connecting', async () => {
      const bad = await runCli(['status', postgres ? '--schema' : '--table-prefix', 'Bad-Name'], env);
      expect(bad.code).toBe(2);
      expect(bad.stderr).toContain(postgres ? '--schema must be 1-47 lowercase letters' : '--table-prefix must be 1-32 lowercase letters');
      const other = await runCli(['status', ...(postgres ? ['--table-prefix', 'ops_'] : ['--schema', 'ops'])], env);
      expect(other.code).toBe(2);
      expect(other.stderr).toContain(postgres ? 'on PostgreSQL use --schema' : 'on MySQL/MariaDB use --table-prefix');
    });
  });
}

/** One line on stderr: no stack trace, no dumped driver error. */
function expectOneLine(run: CliRun): void {
  expect(run.stderr.trimEnd().split('\n')).toHaveLength(1);
  expect(run.stderr).not.toMatch(/\n\s+at /);
}

/**
 * Lock tables in schema `locks` (PostgreSQL) or with prefix `app1_` (MariaDB), and the command line run without
 * saying so: it names the place and the option that selects it, never advises `migrate` (which would create a second,
 * unused set), and `migrate` creates nothing unless told `--create-here`. `LOCK_SCHEMA` / `LOCK_TABLE_PREFIX` choose
 * the place as the options do. A database without lock tables anywhere is still told to run `migrate`.
 */
for (const dialect of DIALECTS) {
  const postgres = dialect.name === 'PostgreSQL';
  const value = postgres ? 'locks' : 'app1_';
  const place: LockTablesOptions = postgres ? { schema: value } : { tablePrefix: value };
  const option = postgres ? '--schema' : '--table-prefix';
  const variable = postgres ? 'LOCK_SCHEMA' : 'LOCK_TABLE_PREFIX';
  const otherVariable = postgres ? 'LOCK_TABLE_PREFIX' : 'LOCK_SCHEMA';
  const advice = postgres
    ? 'schema locks: add --schema locks or set LOCK_SCHEMA=locks'
    : 'table prefix app1_: add --table-prefix app1_ or set LOCK_TABLE_PREFIX=app1_';
  const defaultAdvice = postgres ? 'schema public (the search_path): omit --schema' : 'no table prefix: omit --table-prefix';
  /** How many sets of lock tables the database has (a `locking` table in each schema, or with each prefix). */
  const countSets = postgres
    ? "SELECT count(*)::int AS n FROM pg_class WHERE relname = 'locking' AND relkind IN ('r', 'p')"
    : "SELECT COUNT(*) AS n FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME LIKE '%locking'";
  const sets = async (db: TestDatabase): Promise<number> => Number((await db.query<{ n: number }>(countSets))[0]?.n);

  dialect.describe(`nestjs-db-locks with the lock tables in ${postgres ? 'schema locks' : 'prefix app1_'}, not told so (${dialect.name})`, () => {
    let db: TestDatabase;
    let env: Record<string, string>;
    beforeAll(async () => {
      db = await dialect.createDatabase({ migrate: false });
      env = { DATABASE_URL: db.url };
      const dataSource = new DataSource({ type: postgres ? 'postgres' : 'mariadb', url: db.url, migrations: [...lockMigrations(place)] });
      await dataSource.initialize();
      try {
        await dataSource.runMigrations();
      } finally {
        await dataSource.destroy();
      }
      expect((await runCli(['permits', 'set', 'PLACED', 'read', '2', option, value], env)).code).toBe(0);
    });
    afterAll(() => db?.drop());

    it('every command and migrate --check name the place of the lock tables and its option, and never advise migrate', async () => {
      const commands = [
        ['status'],
        ['status', '--json'],
        ['log'],
        ['jobs'],
        ['permits', 'list'],
        ['permits', 'set', 'ELSEWHERE', 'read', '3'],
        ['release', '5', '--reason', 'drill'],
        ['migrate', '--check'],
        ['migrate', '--check', '--json'],
      ];
      for (const args of commands) {
        const run = await runCli(args, env);
        expect({ args, code: run.code }).toEqual({ args, code: 3 });
        expect(run.stdout).toBe(''); // no "11 lock migration(s) pending"
        expect(run.stderr).toContain('no lock tables in ');
        expect(run.stderr).toContain(`, but this database has them in ${advice}`);
        expect(run.stderr).not.toContain('nestjs-db-locks migrate');
        expectOneLine(run);
      }
    }, 120_000);

    it('migrate creates no second set of lock tables; --create-here does; a place without tables names both others', async () => {
      const refused = await runCli(['migrate'], env);
      expect(refused.code).toBe(3);
      expect(refused.stdout).toBe('');
      expect(refused.stderr).toContain('not creating a second set of lock tables in ');
      expect(refused.stderr).toContain(advice);
      expect(refused.stderr).toContain('--create-here');
      expectOneLine(refused);
      expect(await sets(db)).toBe(1);

      const created = await runCli(['migrate', '--create-here'], env);
      expect(created).toMatchObject({ code: 0, stderr: '' });
      expect(created.stdout).toContain(`Applied ${LOCK_MIGRATIONS.length} lock migration(s)`);
      expect(await sets(db)).toBe(2);
      expect((await runCli(['migrate', '--check'], env)).code).toBe(0); // the default place is a place like another

      const nowhere = postgres ? 'nowhere' : 'nowhere_';
      const byOption = await runCli(['status', option, nowhere], env);
      expect(byOption.code).toBe(3);
      expect(byOption.stderr).toContain(defaultAdvice);
      expect(byOption.stderr).toContain(advice);
      const byVariable = await runCli(['status'], { ...env, [variable]: nowhere });
      expect(byVariable.code).toBe(3);
      expect(byVariable.stderr).toContain(`${postgres ? 'schema public (the search_path)' : 'no table prefix'}: unset ${variable}`);
    }, 120_000);

    it(`${variable} chooses the place as ${option} does; the options win; a bad value names the variable`, async () => {
      const listed = async (run: CliRun): Promise<unknown> => {
        expect(run).toMatchObject({ code: 0, stderr: '' });
        return JSON.parse(run.stdout);
      };
      const placed = { name: 'PLACED', mode: 'read', permits: 2 };
      expect(await listed(await runCli(['permits', 'list', '--json'], { ...env, [variable]: value }))).toEqual([placed]);
      // Given an option, neither variable is read: not even a bad value, nor the other dialect's.
      for (const vars of [{ [variable]: 'Bad-Name' }, { [otherVariable]: 'locks' }]) {
        expect(await listed(await runCli(['permits', 'list', '--json', option, value], { ...env, ...vars }))).toEqual([placed]);
      }

      const bad = await runCli(['status'], { ...env, [variable]: 'Bad-Name' });
      expect(bad.code).toBe(2);
      expect(bad.stderr).toContain(`the variable ${variable} must be 1-${postgres ? 47 : 32} lowercase letters`);
      expect(bad.stderr).toContain(postgres ? 'e.g. LOCK_SCHEMA=locks' : 'e.g. LOCK_TABLE_PREFIX=app1_');
      expect(bad.stderr).not.toContain(option);
      expectOneLine(bad);
      const other = await runCli(['status'], { ...env, [otherVariable]: 'locks' });
      expect(other.code).toBe(2);
      expect(other.stderr).toContain(
        postgres
          ? 'LOCK_TABLE_PREFIX is for MySQL/MariaDB: on PostgreSQL use LOCK_SCHEMA'
          : 'LOCK_SCHEMA is for PostgreSQL: on MySQL/MariaDB use LOCK_TABLE_PREFIX',
      );
      const both = await runCli(['status'], { ...env, LOCK_SCHEMA: 'locks', LOCK_TABLE_PREFIX: 'app1_' });
      expect(both.code).toBe(2);
      expect(both.stderr).toContain('the variables LOCK_SCHEMA and LOCK_TABLE_PREFIX exclude each other');
    }, 120_000);
  });

  dialect.describe(`nestjs-db-locks on a database without lock tables (${dialect.name})`, () => {
    let db: TestDatabase;
    beforeAll(async () => {
      db = await dialect.createDatabase({ migrate: false });
    });
    afterAll(() => db?.drop());

    it('status advises migrate, with the option that chose the place; migrate --check lists them all; migrate applies them', async () => {
      const env = { DATABASE_URL: db.url };
      const missing = await runCli(['status'], env);
      expect(missing.code).toBe(3);
      expect(missing.stderr).toContain('the lock tables are missing in ');
      expect(missing.stderr).toContain('run `nestjs-db-locks migrate`');
      expectOneLine(missing);
      const placed = await runCli(['status', option, value], env);
      expect(placed.code).toBe(3);
      expect(placed.stderr).toContain(`run \`nestjs-db-locks migrate ${option} ${value}\``);

      const check = await runCli(['migrate', '--check'], env);
      expect(check.code).toBe(1);
      expect(check.stdout).toContain(`${LOCK_MIGRATIONS.length} lock migration(s) pending`);
      const applied = await runCli(['migrate'], env);
      expect(applied).toMatchObject({ code: 0, stderr: '' });
      expect(await sets(db)).toBe(1);
      expect((await runCli(['status'], env)).code).toBe(0);
    }, 120_000);
  });
}
