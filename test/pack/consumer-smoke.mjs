// Packs the library, installs the tarball into a fresh Nest application in a temporary folder, compiles that
// application with TypeScript against the published type declarations, and runs it twice: as an ES module
// (`"type": "module"`, `import`) and as a CommonJS application (`require()` of the ES module, which Node.js allows
// from 20.19 and 22.12 on). LockModule.forRoot and LockService.tryLocks must work through `'nestjs-db-locks'` in
// both, exactly as a user gets them. The package's command line must run from the installed package too
// (`npx nestjs-db-locks --version`, then `migrate --check` and `status --json` against the database).
// Options:
//   --oldest-peers  the oldest versions the peer ranges allow (Nest 11, @nestjs/schedule 6, TypeORM 0.3) instead of
//                   the versions this repository develops with;
//   --node MAJOR    install and run the application with that Node.js major (the `node` package of the npm registry)
//                   instead of the Node.js running this script;
//   --mysql         the application on MariaDB (`MYSQL_URL`, or a private MariaDB started from the installed
//                   mariadb-server) with `mysql2`, instead of PostgreSQL with `pg`;
//   --own-connection-only  only the second application (below), not the TypeORM one.
// Then a second application, with no TypeORM of its own (test/pack/own-connection-consumer.mjs), on a database of its
// own on the same server: `LockModule.forRoot({ appId, url })`, `nestjs-db-locks migrate`, a fenced `pg`/`mysql2`
// transaction.
// The install uses `--engine-strict` (npm refuses any package whose `engines` excludes the Node.js in use) except for
// Nest 12 on Node.js < 22: Nest 12's @nestjs/common depends on file-type 22, which declares Node.js >= 22 (npm warns
// EBADENGINE; the README and docs/development.md say so).
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join, resolve } from 'node:path';
import { startEmbeddedPostgres } from '../../sample-app/src/database/embedded-postgres.js';
import { startPrivateMariadb } from '../support/mariadb-server.mjs';
import { runOwnConnectionConsumer, writeConsumerTsconfig } from './own-connection-consumer.mjs';

const root = resolve(import.meta.dirname, '../..');
const own = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const work = mkdtempSync(join(tmpdir(), 'ndl-consumer-'));
chmodSync(work, 0o755);
/** @type {NodeJS.ProcessEnv} */
let toolEnv = process.env;
/** @type {(cmd: string, args: string[], cwd: string, env?: NodeJS.ProcessEnv) => string} */
const run = (cmd, args, cwd, env = toolEnv) =>
  execFileSync(cmd, args, { cwd, env, stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8' });

const tarball = join(work, run('npm', ['pack', '--silent', '--pack-destination', work], root).trim().split('\n').pop() ?? '');
/** The lower bound of each peer range that has several majors, e.g. `^11.0.0 || ^12.0.0` → `^11.0.0`. */
const OLDEST = process.argv.includes('--oldest-peers');
const MYSQL = process.argv.includes('--mysql');
const OWN_CONNECTION_ONLY = process.argv.includes('--own-connection-only');
/** The driver the application installs, and how its TypeORM DataSource and LockModule are configured. */
const DRIVER = MYSQL ? 'mysql2' : 'pg';
const DATA_SOURCE = MYSQL
  ? `{ type: 'mariadb', url: process.env.DATABASE_URL, timezone: 'Z', migrations: [...LOCK_MIGRATIONS], migrationsRun: true }`
  : `{ type: 'postgres', url: process.env.DATABASE_URL, migrations: [...LOCK_MIGRATIONS], migrationsRun: true }`;
const DIALECT = MYSQL ? `, dialect: 'mysql'` : '';
const nodeArg = process.argv.indexOf('--node');
const NODE_MAJOR = nodeArg > 0 ? Number(process.argv[nodeArg + 1]) : undefined;
if (NODE_MAJOR !== undefined && !Number.isSafeInteger(NODE_MAJOR)) throw new Error('--node takes a major version, e.g. --node 22');

/** @type {(name: string) => string} */
const versionOf = (name) => {
  if (OLDEST && name === '@nestjs/platform-express') return versionOf('@nestjs/core');
  if (name === 'mysql2' && OLDEST) return own.peerDependencies.mysql2;
  const peer = own.peerDependencies[name];
  return OLDEST && peer ? peer.split('||')[0].trim() : own.devDependencies[name];
};

// The Node.js that installs and runs the application: this one, or the one `--node` asks for, first on the PATH
// (so that `npm` itself runs on it and checks `engines` against it).
if (NODE_MAJOR !== undefined) {
  const nodeDir = join(work, 'node');
  mkdirSync(nodeDir);
  writeFileSync(join(nodeDir, 'package.json'), JSON.stringify({ name: 'node-runtime', private: true }));
  run('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error', `node@${NODE_MAJOR}`], nodeDir);
  toolEnv = { ...process.env, PATH: `${join(nodeDir, 'node_modules', '.bin')}${delimiter}${process.env.PATH ?? ''}` };
}
const nodeVersion = run('node', ['--version'], work).trim();
const nodeMajor = Number(/^v(\d+)/.exec(nodeVersion)?.[1]);
if (NODE_MAJOR !== undefined && nodeMajor !== NODE_MAJOR) throw new Error(`asked for Node.js ${NODE_MAJOR}, got ${nodeVersion}`);
const engineStrict = OLDEST || nodeMajor >= 22;

const app = join(work, 'app');
mkdirSync(join(app, 'src'), { recursive: true });
writeFileSync(
  join(app, 'package.json'),
  JSON.stringify({
    name: 'fresh-nest-app',
    private: true,
    type: 'module',
    dependencies: Object.fromEntries([
      ['nestjs-db-locks', `file:${tarball}`],
      ['@types/node', versionOf('@types/node')],
      ...['@nestjs/common', '@nestjs/core', '@nestjs/platform-express', '@nestjs/schedule', '@nestjs/terminus', '@nestjs/typeorm', 'typeorm', DRIVER, 'reflect-metadata', 'rxjs'].map(
        (name) => [name, versionOf(name)],
      ),
    ]),
  }),
);
writeConsumerTsconfig(app);
/**
 * The application: a controller method under `@WithLocks` and a `tryLocks` call, checked through HTTP. The same source
 * compiles to an ES module (`app/`) and to CommonJS (`app/cjs/`, where `import` becomes `require()`).
 * @type {(appId: string) => string}
 */
const mainSource = (appId) => `import 'reflect-metadata';
import { Controller, Get, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ScheduleModule } from '@nestjs/schedule';
import { HealthCheck, HealthCheckService, TerminusModule } from '@nestjs/terminus';
import { TypeOrmModule } from '@nestjs/typeorm';
import { LOCK_MIGRATIONS, LockModule, LockService, WithLocks, type LockSpec } from 'nestjs-db-locks';
import { LockHealthIndicator } from 'nestjs-db-locks/terminus';

@Controller('ws1')
class Ws1Controller {
  @Get()
  @WithLocks('WS1_READ')
  async read(): Promise<{ ok: boolean }> {
    return { ok: true };
  }
}

@Controller('health')
class HealthController {
  constructor(private readonly health: HealthCheckService, private readonly locks: LockHealthIndicator) {}

  @Get()
  @HealthCheck()
  check() {
    return this.health.check([() => this.locks.isHealthy('locks')]);
  }
}

@Module({
  imports: [
    TypeOrmModule.forRoot(${DATA_SOURCE}),
    ScheduleModule.forRoot(),
    LockModule.forRoot({ appId: '${appId}'${DIALECT} }),
    TerminusModule,
  ],
  controllers: [Ws1Controller, HealthController],
  providers: [LockHealthIndicator],
})
class AppModule {}

async function main(): Promise<void> {
  const app = await NestFactory.create(AppModule, { logger: ['error'] });
  await app.listen(0, '127.0.0.1');
  const url = 'http://127.0.0.1:' + (app.getHttpServer().address() as { port: number }).port + '/ws1';
  const locks = app.get(LockService);
  const group: LockSpec[] = ['WS1_WRITE', 'WS0_READ'];
  const stamp = await locks.tryLocks(group);
  const second = await locks.tryLocks(['WS1_WRITE']);
  const whileHeld = await fetch(url);
  await locks.releaseLocks(stamp);
  const afterRelease = await fetch(url);
  // A waiter gets a group as soon as its holder releases it.
  const held = await locks.tryLocks(['WS9_WRITE']);
  const waiting = locks.tryLocks(['WS9_WRITE'], { waitMs: 10000 });
  setTimeout(() => void locks.releaseLocks(held), 200);
  const handedOver = await waiting;
  await locks.releaseLocks(handedOver);
  // A fenced transaction: its last statement records "business done" for the grant, then it commits and releases.
  const fenced = await locks.withLocks({ locks: ['WS8_WRITE'], transaction: true }, async () => {
    await locks.currentManager().query('SELECT 1');
    return 'fenced';
  });
  const fencedRow = (await locks.getLog(5)).find((entry) => entry.locks.some((lock) => lock.name === 'WS8'));
  if (!(handedOver > held) || fenced !== 'fenced' || fencedRow?.status !== 'RELEASED' || !fencedRow.businessDoneAt) {
    throw new Error('unexpected wait or fence: ' + handedOver + ', ' + fenced + ', ' + JSON.stringify(fencedRow));
  }
  const health = await fetch(url.replace('/ws1', '/health'));
  const healthBody = (await health.json()) as { info?: { locks?: { status?: string } } };
  await app.close();
  if (health.status !== 200 || healthBody.info?.locks?.status !== 'up') {
    throw new Error('unexpected health: ' + health.status + ' ' + JSON.stringify(healthBody));
  }
  if (!(stamp > 0) || second !== 0) throw new Error('unexpected grants: ' + stamp + ', ' + second);
  if (whileHeld.status !== 423 || afterRelease.status !== 200) {
    throw new Error('unexpected HTTP statuses: ' + whileHeld.status + ', ' + afterRelease.status);
  }
  const format = typeof require === 'function' && typeof module === 'object' ? 'CommonJS' : 'ES module';
  console.log('consumer ok (' + format + ', ' + ${JSON.stringify(`${OLDEST ? 'oldest peers' : 'current peers'}, ${MYSQL ? 'MariaDB' : 'PostgreSQL'}`)} + ', Node.js ' + process.version + '): stamp ' + stamp + ', HTTP 423 while held, 200 after release, a waiter handed over, a fenced transaction, /health up through nestjs-db-locks/terminus');
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
`;
writeFileSync(join(app, 'src', 'main.ts'), mainSource('consumer-esm'));
// The CommonJS application: its own package.json without "type": "module", the same dependencies (found in app/).
const cjs = join(app, 'cjs');
mkdirSync(join(cjs, 'src'), { recursive: true });
writeFileSync(join(cjs, 'package.json'), JSON.stringify({ name: 'fresh-nest-app-cjs', private: true, type: 'commonjs' }));
writeFileSync(
  join(cjs, 'tsconfig.json'),
  JSON.stringify({ extends: '../tsconfig.json', compilerOptions: { outDir: 'dist', rootDir: 'src' }, include: ['src'] }),
);
writeFileSync(join(cjs, 'src', 'main.ts'), mainSource('consumer-cjs'));

const tsc = join(root, 'node_modules/.bin/tsc');
if (!OWN_CONNECTION_ONLY) {
  run('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error', ...(engineStrict ? ['--engine-strict'] : [])], app);
  run(tsc, ['-p', 'tsconfig.json'], app);
  run(tsc, ['-p', 'tsconfig.json'], cjs);
  const installed = ['@nestjs/core', '@nestjs/schedule', '@nestjs/typeorm', 'typeorm', DRIVER].map(
    (name) => `${name}@${JSON.parse(readFileSync(join(app, 'node_modules', name, 'package.json'), 'utf8')).version}`,
  );
  console.log(
    `consumer app with ${installed.join(', ')} on Node.js ${nodeVersion}` +
      (engineStrict ? ' (installed with --engine-strict)' : ''),
  );

  // The command line of the installed package, through npx as a user runs it (no download: it is installed).
  const cliVersion = run('npx', ['--no-install', 'nestjs-db-locks', '--version'], app).trim();
  if (cliVersion !== own.version) throw new Error(`npx nestjs-db-locks --version printed ${cliVersion}, expected ${own.version}`);
  console.log(`npx nestjs-db-locks --version: ${cliVersion}`);
}

const parent = mkdtempSync(join(tmpdir(), 'ndl-consumer-db-'));
chmodSync(parent, 0o755);
/** The database of the run: DATABASE_URL (MYSQL_URL with --mysql) when set, else a server of its own. */
async function openDatabase() {
  if (MYSQL) {
    if (process.env.MYSQL_URL) return { url: process.env.MYSQL_URL, server: undefined };
    const mariadb = await startPrivateMariadb(join(parent, 'mariadb'));
    const { createConnection } = await import('mysql2/promise');
    const admin = await createConnection({ uri: mariadb.url });
    await admin.query('CREATE DATABASE consumer CHARACTER SET utf8mb4 COLLATE utf8mb4_bin');
    await admin.end();
    return { url: mariadb.url.replace(/\/mysql$/, '/consumer'), server: mariadb };
  }
  if (process.env.DATABASE_URL) return { url: process.env.DATABASE_URL, server: undefined };
  const pg = await startEmbeddedPostgres({ dataDir: join(parent, 'pg'), persistent: false });
  return { url: pg.url, server: pg };
}
/**
 * A new, empty database `name` on the server of `url` (dropped first if it exists); returns its URL.
 * @type {(url: string, name: string) => Promise<string>}
 */
async function createDatabase(url, name) {
  if (MYSQL) {
    const { createConnection } = await import('mysql2/promise');
    const admin = await createConnection({ uri: url });
    await admin.query(`DROP DATABASE IF EXISTS ${name}`);
    await admin.query(`CREATE DATABASE ${name} CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`);
    await admin.end();
  } else {
    const { default: pg } = await import('pg');
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS ${name}`);
    await admin.query(`CREATE DATABASE ${name}`);
    await admin.end();
  }
  const target = new URL(url);
  target.pathname = `/${name}`;
  return target.toString();
}
const { url: databaseUrl, server } = await openDatabase();
const env = { ...process.env, DATABASE_URL: databaseUrl };
try {
  for (const [dir, format] of OWN_CONNECTION_ONLY ? [] : [[app, 'ES module'], [cjs, 'CommonJS']]) {
    const out = run('node', ['dist/main.js'], dir, { ...toolEnv, DATABASE_URL: env.DATABASE_URL });
    process.stdout.write(out);
    if (!out.includes(`consumer ok (${format},`)) throw new Error(`the ${format} application did not report success`);
  }
  // The applications ran the migrations: the command line finds none pending (exit code 0) and reads the tables.
  if (!OWN_CONNECTION_ONLY) {
    const cliEnv = { ...toolEnv, DATABASE_URL: env.DATABASE_URL };
    process.stdout.write(run('npx', ['--no-install', 'nestjs-db-locks', 'migrate', '--check'], app, cliEnv));
    const status = JSON.parse(run('npx', ['--no-install', 'nestjs-db-locks', 'status', '--json'], app, cliEnv));
    if (!Array.isArray(status.grants) || !Array.isArray(status.log)) throw new Error('nestjs-db-locks status --json: unexpected output');
    console.log(`npx nestjs-db-locks status --json: ${status.grants.length} grants, ${status.log.length} log rows`);
  }
  const ownDatabase = await createDatabase(databaseUrl, 'consumer_own');
  runOwnConnectionConsumer({ work, tarball, versionOf, mysql: MYSQL, databaseUrl: ownDatabase, toolEnv, engineStrict, tsc });
} finally {
  await server?.stop();
  rmSync(work, { recursive: true, force: true });
  rmSync(parent, { recursive: true, force: true });
}
