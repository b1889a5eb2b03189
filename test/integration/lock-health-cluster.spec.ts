import { LockAdminService } from 'nestjs-db-locks';
import { runCli } from '../../lib/cli/lock-cli.program.js';
import { DIALECTS } from '../support/dialects.js';
import { createLockApp, trackApps } from '../support/lock-app.js';
import type { TestDatabase } from '../support/test-database.js';

/** The command line run in this process on `url`: its exit code, stdout and stderr. */
async function cli(url: string, args: readonly string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await runCli(args, { out: (text) => (out += text), err: (text) => (err += text) }, { DATABASE_URL: url });
  return { code, out, err };
}

// Issue 49, item 6: on a Galera node, getHealth() and `status` report the node (`galera`: its name, whether it is in the
// primary component, its sync state, the size of its component). On any other server they show nothing new. A plain
// MariaDB (Debian's is built with wsrep) has the `wsrep_*` status values of a node in no cluster, with `wsrep_on` OFF:
// the report must come from `wsrep_on`, not from the mere presence of those values. The Galera side runs in
// test/galera/ (a cluster of three nodes).
for (const dialect of DIALECTS) dialect.describe(`health and status of a server that is no Galera node, on ${dialect.name}`, () => {
  let db: TestDatabase;
  const apps = trackApps((appId: string) => createLockApp(db.url, { appId }));

  beforeAll(async () => {
    db = await dialect.createDatabase();
  }, 60_000);
  afterEach(() => apps.closeAll());
  afterAll(() => db?.drop());

  it('getHealth() and LockAdminService.getGaleraNode() report no Galera node', async () => {
    if (dialect.name === 'MariaDB') {
      // What makes the check meaningful here: wsrep off, whatever status values the server has.
      const [server] = await db.query<{ wsrep_on: string | null }>(
        "SELECT (SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_VARIABLES WHERE VARIABLE_NAME = 'WSREP_ON') AS wsrep_on",
      );
      expect(server?.wsrep_on ?? 'OFF').toBe('OFF');
    }
    const app = await apps.start('no-cluster');
    const stamp = await app.locks.tryLocks(['PLAIN_SERVER_WRITE']);
    const health = await app.locks.getHealth();
    expect(health).toMatchObject({ healthy: true, database: 'reachable', grantsHeld: 1, problems: [] });
    expect(health).not.toHaveProperty('galera');
    expect(await app.app.get(LockAdminService).getGaleraNode()).toBeUndefined();
    await app.locks.releaseLocks(stamp);
  });

  it('status prints no Galera line, and its --json has the same four keys as before', async () => {
    const app = await apps.start('no-cluster-cli');
    const stamp = await app.locks.tryLocks(['PLAIN_SERVER_CLI_WRITE']);
    const text = await cli(db.url, ['status', '--name', 'PLAIN_SERVER_CLI']);
    expect(text).toMatchObject({ code: 0, err: '' });
    expect(text.out).toMatch(/^Grants held now \(1\)\n/);
    expect(text.out).not.toMatch(/galera/i); // the lock names say nothing of it either
    const json = await cli(db.url, ['status', '--json', '--name', 'PLAIN_SERVER_CLI']);
    expect(json).toMatchObject({ code: 0, err: '' });
    const status = JSON.parse(json.out) as Record<string, unknown>;
    expect(Object.keys(status)).toEqual(['grants', 'waiters', 'permits', 'log']);
    expect(status.grants).toEqual([expect.objectContaining({ stamp, appId: 'no-cluster-cli' })]);
  });
});
