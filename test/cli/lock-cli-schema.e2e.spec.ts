import { LOCK_MIGRATIONS, type LockTablesOptions } from 'nestjs-db-locks';
import { runCli } from '../support/cli-process.js';
import { DIALECTS } from '../support/dialects.js';
import { createLockApp, type LockApp } from '../support/lock-app.js';
import type { TestDatabase } from '../support/test-database.js';

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

    it('migrate applies the migrations of the place only, under its names; status, log and release act there', async () => {
      const before = await runCli(['migrate', '--check', ...flag], env);
      expect(before.code).toBe(1);
      for (const name of names) expect(before.stdout).toContain(name);
      const applied = await runCli(['migrate', ...flag], env);
      expect(applied).toMatchObject({ code: 0, stderr: '' });
      expect(applied.stdout).toContain(`Applied ${names.length} lock migration(s)`);
      const check = await runCli(['migrate', '--check', '--json', ...flag], env);
      expect(check.code).toBe(0);
      expect(JSON.parse(check.stdout)).toEqual({ applied: names, pending: [], ran: [] });
      // The default place is another place: still to migrate.
      const defaults = await runCli(['migrate', '--check', '--json'], env);
      expect(defaults.code).toBe(1);
      expect(JSON.parse(defaults.stdout).pending).toEqual(LOCK_MIGRATIONS.map((migration) => migration.name));

      app = await createLockApp(db.url, { appId: 'ops-holder', ...place });
      const stamp = await app.locks.tryLocks(['ledger_WRITE']);
      expect(stamp).toBeGreaterThan(0);
      const status = await runCli(['status', '--json', ...flag], env);
      expect(status.code).toBe(0);
      expect(JSON.parse(status.stdout).grants).toEqual([expect.objectContaining({ stamp, appId: 'ops-holder' })]);
      const viaEnv = await runCli(['status', '--json'], { ...env, ...(postgres ? { LOCK_SCHEMA: 'ops_locks' } : { LOCK_TABLE_PREFIX: 'ops_' }) });
      expect(JSON.parse(viaEnv.stdout).grants).toEqual([expect.objectContaining({ stamp })]);
      const elsewhere = await runCli(['status', '--json'], env);
      expect(elsewhere.code).toBe(3); // the default place has no tables
      expect(elsewhere.stderr).toContain('the lock tables are missing');

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
