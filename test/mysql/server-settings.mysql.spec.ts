import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LockConfigurationError } from 'nestjs-db-locks';
import { createLockApp } from '../support/lock-app.js';
import { canStartMariadb, startRestartableMariadb, type RestartableServer } from '../support/restartable-server.js';

// An older replicated server that logs statements: the migrations pass, but every READ COMMITTED write of InnoDB then
// fails (1665). The library refuses at start-up, naming the setting, instead of failing every grant.
(canStartMariadb() ? describe : describe.skip)('MySQL/MariaDB: server settings checked at start-up', () => {
  let server: RestartableServer;

  beforeAll(async () => {
    server = await startRestartableMariadb(['--log-bin=ndl-bin', '--server-id=1', '--binlog-format=STATEMENT']);
  });
  afterAll(() => server?.destroy());

  it('refuses binlog_format = STATEMENT with a LockConfigurationError that says what to set, and holds nothing', async () => {
    const error = await createLockApp(server.url, { appId: 'statement-log' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockConfigurationError);
    expect((error as Error).message).toMatch(/binlog_format = ROW/);
    expect(await server.appIdsHeld(['statement-log'])).toBe(0);
    // Once the server logs rows, the same application starts and grants.
    await server.tryQuery(`SET GLOBAL binlog_format = 'ROW'`);
    const app = await createLockApp(server.url, { appId: 'statement-log' });
    try {
      expect(await app.locks.tryLocks(['B_WRITE'])).toBeGreaterThan(0);
      expect(await app.locks.getHealth()).toMatchObject({ healthy: true });
    } finally {
      await app.close();
    }
  });

});

// A lock user without EXECUTE: it started, reported itself healthy, and then every grant failed (HTTP 503). The server
// checks privileges here (grant tables on), with a lock user that has every privilege on the database but EXECUTE.
(canStartMariadb() ? describe : describe.skip)('MySQL/MariaDB: privileges checked at start-up', () => {
  let server: RestartableServer;
  let dir: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ndl-grants-'));
    const init = join(dir, 'init.sql');
    writeFileSync(
      init,
      [
        "CREATE USER IF NOT EXISTS 'root'@'127.0.0.1'",
        "GRANT ALL PRIVILEGES ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION",
        "CREATE USER IF NOT EXISTS 'locker'@'127.0.0.1' IDENTIFIED BY 'pw'",
        "GRANT SELECT, INSERT, UPDATE, DELETE, CREATE, DROP, INDEX, ALTER, LOCK TABLES ON locks.* TO 'locker'@'127.0.0.1'",
      ].join(';\n') + ';\n',
    );
    server = await startRestartableMariadb(['--grant-tables', `--init-file=${init}`]);
  });
  afterAll(async () => {
    await server?.destroy();
    rmSync(dir, { recursive: true, force: true });
  });

  it('refuses a lock user without EXECUTE on the procedures, naming the grant to give; starts once it has it', async () => {
    const url = new URL(server.url);
    url.username = 'locker';
    url.password = 'pw';
    const error = await createLockApp(url.toString(), { appId: 'no-execute' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockConfigurationError);
    expect((error as Error).message).toMatch(/GRANT EXECUTE/);
    await server.tryQuery(`GRANT EXECUTE ON locks.* TO 'locker'@'127.0.0.1'`);
    const app = await createLockApp(url.toString(), { appId: 'no-execute' });
    try {
      expect(await app.locks.tryLocks(['E_WRITE'])).toBeGreaterThan(0);
      expect(await app.locks.getHealth()).toMatchObject({ healthy: true, problems: [] });
    } finally {
      await app.close();
    }
  });
});
