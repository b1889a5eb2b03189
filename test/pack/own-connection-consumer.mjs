// The second consumer of the packed library: a Nest application with NO TypeORM of its own (neither `typeorm` nor
// `@nestjs/typeorm` in its package.json or its code), as docs/data-layers.md's install line makes it. The library runs
// on a connection of its own (`LockModule.forRoot({ appId, url })`); its tables come from `nestjs-db-locks migrate`
// run from the application's node_modules/.bin; a controller under `@WithLocks` repays a loan in a plain `pg` (or
// `mysql2`) transaction fenced with `LockFence`. Checked from the user's side: npm installs it without a peer warning
// or error, the command line migrates, the HTTP answers (201, then 409 for a grant forced free before the commit), the
// fenced row committed and the other rolled back, and the process ending by itself once `app.close()` resolved.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * What the consumer is built from and run against.
 * @typedef {object} OwnConnectionConsumer
 * @property {string} work a temporary folder (the application goes to `work/own-app`)
 * @property {string} tarball the packed library
 * @property {(name: string) => string} versionOf the version range the application asks for a package
 * @property {boolean} mysql MariaDB with `mysql2` instead of PostgreSQL with `pg`
 * @property {string} databaseUrl a database of its own, without the lock tables
 * @property {NodeJS.ProcessEnv} toolEnv the environment that runs `npm` and `node` (its PATH picks the Node.js)
 * @property {boolean} engineStrict whether `npm install` runs with `--engine-strict`
 * @property {string} tsc the TypeScript compiler
 */

/**
 * The tsconfig.json of a consumer application in `dir` (its sources in `src/`, compiled to `dist/`), as a Nest
 * application with `"module": "nodenext"` has it.
 * @param {string} dir
 */
export function writeConsumerTsconfig(dir) {
  writeFileSync(
    join(dir, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, outDir: 'dist',
        experimentalDecorators: true, emitDecoratorMetadata: true, skipLibCheck: true, types: ['node'], lib: ['ES2023', 'DOM'],
      },
      include: ['src'],
    }),
  );
}

/** How long the application may take to answer, end its work and exit by itself. */
const RUN_TIMEOUT_MS = 120_000;

/**
 * Runs `cmd` and returns its outcome; throws (with its output) when it failed or timed out.
 * @type {(cmd: string, args: string[], cwd: string, env: NodeJS.ProcessEnv, timeout?: number) => { stdout: string, stderr: string }}
 */
function run(cmd, args, cwd, env, timeout = 600_000) {
  const result = spawnSync(cmd, args, { cwd, env, encoding: 'utf8', timeout, killSignal: 'SIGKILL' });
  if (result.error || result.status !== 0) {
    const why = result.error ? String(result.error) : `exit code ${result.status}, signal ${result.signal}`;
    throw new Error(`${cmd} ${args.join(' ')} failed (${why}):\n${result.stdout}\n${result.stderr}`);
  }
  return { stdout: result.stdout, stderr: result.stderr };
}

/**
 * The application's data access: its pool, a transaction that inserts a repayment, and the count of repayments.
 * @type {(mysql: boolean) => string}
 */
const businessSource = (mysql) =>
  mysql
    ? `import { createPool, type RowDataPacket } from 'mysql2/promise';

const pool = createPool({ uri: process.env.DATABASE_URL!, connectionLimit: 4 });
const createTable = () => pool.query('CREATE TABLE IF NOT EXISTS repayments (loan_id int NOT NULL, amount int NOT NULL)');
async function begin() {
  const connection = await pool.getConnection();
  await connection.query('START TRANSACTION');
  return {
    connection,
    insert: (loanId: number) => connection.query('INSERT INTO repayments (loan_id, amount) VALUES (?, 10)', [loanId]),
    rollback: () => connection.query('ROLLBACK'),
    end: () => connection.release(),
  };
}
async function repayments(loanId: number): Promise<number> {
  const [rows] = await pool.query<RowDataPacket[]>('SELECT count(*) AS n FROM repayments WHERE loan_id = ?', [loanId]);
  return Number(rows[0]?.n);
}
`
    : `import pg from 'pg';

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 4 });
const createTable = () => pool.query('CREATE TABLE IF NOT EXISTS repayments (loan_id int NOT NULL, amount int NOT NULL)');
async function begin() {
  const connection = await pool.connect();
  await connection.query('BEGIN');
  return {
    connection,
    insert: (loanId: number) => connection.query('INSERT INTO repayments (loan_id, amount) VALUES ($1, 10)', [loanId]),
    rollback: () => connection.query('ROLLBACK'),
    end: () => connection.release(),
  };
}
async function repayments(loanId: number): Promise<number> {
  const result = await pool.query<{ n: string }>('SELECT count(*) AS n FROM repayments WHERE loan_id = $1', [loanId]);
  return Number(result.rows[0]?.n);
}
`;

/** @type {(mysql: boolean) => string} */
const mainSource = (mysql) => `import 'reflect-metadata';
import { Controller, Get, Module, Param, Post } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ScheduleModule } from '@nestjs/schedule';
import { LockAdminService, LockFence, LockModule, LockService, WithLocks } from 'nestjs-db-locks';
${businessSource(mysql)}
/** Where a repayment stops once it holds its lock: main() forces the grant free meanwhile. */
const gate = { entered: (_stamp: number): void => undefined, proceed: Promise.resolve() };

@Controller('loans')
class LoansController {
  constructor(private readonly locks: LockService, private readonly fence: LockFence) {}

  @Post(':id/repay')
  @WithLocks({ locks: (id: string) => ['loan:' + id + '_WRITE'] })
  async repay(@Param('id') id: string): Promise<{ repaid: boolean }> {
    const { stamp } = this.locks.currentLock()!;
    gate.entered(stamp);
    await gate.proceed;
    const tx = await begin();
    try {
      await tx.insert(Number(id));
      await this.fence.fenceAndCommit(tx.connection, stamp); // LockLostError (409): rolled back
    } catch (error) {
      await tx.rollback().catch(() => undefined);
      throw error;
    } finally {
      tx.end();
    }
    return { repaid: true };
  }

  @Get(':id')
  @WithLocks({ locks: (id: string) => ['loan:' + id + '_READ'] })
  async read(@Param('id') id: string): Promise<{ repayments: number }> {
    return { repayments: await repayments(Number(id)) };
  }
}

@Module({
  imports: [ScheduleModule.forRoot(), LockModule.forRoot({ appId: 'own-connection-consumer', url: process.env.DATABASE_URL! })],
  controllers: [LoansController],
})
class AppModule {}

async function main(): Promise<void> {
  await createTable();
  const app = await NestFactory.create(AppModule, { logger: ['error', 'warn'] });
  await app.listen(0, '127.0.0.1');
  const base = 'http://127.0.0.1:' + (app.getHttpServer().address() as { port: number }).port + '/loans';
  const repaid = await fetch(base + '/1/repay', { method: 'POST' });
  const read = (await (await fetch(base + '/1')).json()) as { repayments: number };

  let proceed!: () => void;
  gate.proceed = new Promise<void>((resolve) => (proceed = resolve));
  const held = new Promise<number>((resolve) => (gate.entered = resolve));
  const forcedAnswer = fetch(base + '/2/repay', { method: 'POST' });
  const stamp = await held;
  const forced = (await app.get(LockAdminService).forceRelease(stamp, 'stuck repayment')).stamp === stamp;
  proceed();
  const lost = await forcedAnswer;
  const lostBody = (await lost.json()) as { message?: string };
  const rolledBack = await repayments(2);

  await app.close();
  await pool.end();
  // What still keeps the process alive once both are closed (stdout and stderr aside), after 2 s at most for the
  // HTTP connections to go: a socket or timer of the library left behind shows here.
  const stillOpen = () => process.getActiveResourcesInfo().filter((resource) => !['PipeWrap', 'TTYWrap'].includes(resource));
  for (let waited = 0; stillOpen().length > 0 && waited < 2000; waited += 50) await new Promise((resolve) => setTimeout(resolve, 50));
  const left = stillOpen();
  const seen = { repaid: repaid.status, read, forced, lost: lost.status, lostMessage: lostBody.message, rolledBack, left };
  console.log('own-connection consumer: ' + JSON.stringify(seen));
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
`;

/**
 * Builds the application without TypeORM, installs the packed library into it, migrates its database with the
 * package's command line and runs it; throws when anything the user would see differs.
 * @param {OwnConnectionConsumer} consumer
 * @returns {{ typeorm: string, seconds: number }} the TypeORM npm installed as the library's peer, and the time taken
 */
export function runOwnConnectionConsumer({ work, tarball, versionOf, mysql, databaseUrl, toolEnv, engineStrict, tsc }) {
  const started = performance.now();
  const driver = mysql ? 'mysql2' : 'pg';
  const app = join(work, 'own-app');
  mkdirSync(join(app, 'src'), { recursive: true });
  const dependencies = Object.fromEntries([
    ['nestjs-db-locks', `file:${tarball}`],
    ...['@nestjs/common', '@nestjs/core', '@nestjs/platform-express', '@nestjs/schedule', 'reflect-metadata', 'rxjs', driver, '@types/node']
      .concat(mysql ? [] : ['@types/pg'])
      .map((name) => [name, versionOf(name)]),
  ]);
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'fresh-nest-app-own-connection', private: true, type: 'module', dependencies }));
  writeConsumerTsconfig(app);
  const source = mainSource(mysql);
  writeFileSync(join(app, 'src', 'main.ts'), source);
  for (const text of [readFileSync(join(app, 'package.json'), 'utf8'), source]) {
    if (/typeorm/i.test(text)) throw new Error('the application without TypeORM names TypeORM');
  }

  // npm installs the library's required peers (typeorm, @nestjs/typeorm) itself: no warning about a peer, no error.
  const install = run(
    'npm',
    ['install', '--no-audit', '--no-fund', '--loglevel=warn', ...(engineStrict ? ['--engine-strict'] : [])],
    app,
    toolEnv,
  );
  const peerWarnings = install.stderr.split('\n').filter((line) => /peer|ERESOLVE|conflict/i.test(line));
  if (peerWarnings.length > 0) throw new Error(`npm install warned about peers:\n${install.stderr}`);
  const typeorm = JSON.parse(readFileSync(join(app, 'node_modules', 'typeorm', 'package.json'), 'utf8')).version;
  const nestTypeormPackage = join(app, 'node_modules', '@nestjs', 'typeorm', 'package.json');
  if (!existsSync(nestTypeormPackage)) throw new Error('npm did not install the peer @nestjs/typeorm');
  const nestTypeorm = JSON.parse(readFileSync(nestTypeormPackage, 'utf8')).version;
  run(tsc, ['-p', 'tsconfig.json'], app, toolEnv);

  // The deploy step: the command line from node_modules/.bin creates the lock tables, then finds none pending.
  const env = { ...toolEnv, DATABASE_URL: databaseUrl };
  const cli = join(app, 'node_modules', '.bin', 'nestjs-db-locks');
  const migrated = run(cli, ['migrate'], app, env).stdout;
  run(cli, ['migrate', '--check'], app, env);

  // Once app.close() resolved nothing of the library is left (no socket, no timer: `left`), and the process ends by
  // itself (exit code 0, within the timeout).
  const ran = run('node', ['dist/main.js'], app, env, RUN_TIMEOUT_MS);
  // Its one log line: the grant forced free, logged as lost when the fence found it so.
  const logged = ran.stderr.split('\n').filter((line) => line.trim() !== '');
  if (logged.length !== 1 || !/ERROR.*Locks of stamp \d+ lost: .*forced/.test(logged[0] ?? '')) {
    throw new Error(`the application without TypeORM logged other than its forced grant:\n${ran.stderr}`);
  }
  const line = /own-connection consumer: (.*)/.exec(ran.stdout)?.[1];
  const seen = line === undefined ? undefined : JSON.parse(line);
  const expected = {
    repaid: 201,
    read: { repayments: 1 },
    forced: true,
    lost: 409,
    rolledBack: 0,
    left: [],
  };
  const { lostMessage, ...rest } = seen ?? {};
  if (JSON.stringify(rest) !== JSON.stringify(expected) || typeof lostMessage !== 'string') {
    throw new Error(`the application without TypeORM saw ${line ?? ran.stdout}, expected ${JSON.stringify(expected)}`);
  }
  const seconds = (performance.now() - started) / 1000;
  console.log(
    `consumer without TypeORM ok (${mysql ? 'MariaDB, mysql2' : 'PostgreSQL, pg'}; npm installed the peers typeorm@${typeorm} and @nestjs/typeorm@${nestTypeorm}): ` +
      `\`nestjs-db-locks migrate\` (${migrated.trim().split('\n').length} lines), HTTP 201 for a fenced repayment, ` +
      `409 for one whose grant was forced free before its commit (rolled back: "${lostMessage}"), exited by itself; ${seconds.toFixed(0)} s`,
  );
  return { typeorm, seconds };
}
