// Packs the library, installs the tarball into a fresh Nest application in a temporary folder, compiles that
// application with TypeScript against the published type declarations, and runs it: LockModule.forRoot and
// LockService.tryLocks must work through `import { … } from 'nestjs-db-locks'`, exactly as a user gets them.
// With `--oldest-peers` the application uses the oldest versions the peer ranges allow (Nest 11, @nestjs/schedule 6,
// TypeORM 0.3) instead of the versions this repository develops with.
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { startEmbeddedPostgres } from '../../sample-app/src/database/embedded-postgres.js';

const root = resolve(import.meta.dirname, '../..');
const own = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const work = mkdtempSync(join(tmpdir(), 'ndl-consumer-'));
chmodSync(work, 0o755);
/** @type {(cmd: string, args: string[], cwd: string) => string} */
const run = (cmd, args, cwd) => execFileSync(cmd, args, { cwd, stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8' });

const tarball = join(work, run('npm', ['pack', '--silent', '--pack-destination', work], root).trim().split('\n').pop() ?? '');
/** The lower bound of each peer range that has several majors, e.g. `^11.0.0 || ^12.0.0` → `^11.0.0`. */
const OLDEST = process.argv.includes('--oldest-peers');
/** @type {(name: string) => string} */
const versionOf = (name) => {
  if (OLDEST && name === '@nestjs/platform-express') return versionOf('@nestjs/core');
  const peer = own.peerDependencies[name];
  return OLDEST && peer ? peer.split('||')[0].trim() : own.devDependencies[name];
};
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
      ...['@nestjs/common', '@nestjs/core', '@nestjs/platform-express', '@nestjs/schedule', '@nestjs/typeorm', 'typeorm', 'pg', 'reflect-metadata', 'rxjs'].map(
        (name) => [name, versionOf(name)],
      ),
    ]),
  }),
);
writeFileSync(
  join(app, 'tsconfig.json'),
  JSON.stringify({
    compilerOptions: {
      target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, outDir: 'dist',
      experimentalDecorators: true, emitDecoratorMetadata: true, skipLibCheck: true, types: ['node'], lib: ['ES2023', 'DOM'],
    },
    include: ['src'],
  }),
);
writeFileSync(
  join(app, 'src', 'main.ts'),
  `import 'reflect-metadata';
import { Controller, Get, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ScheduleModule } from '@nestjs/schedule';
import { TypeOrmModule } from '@nestjs/typeorm';
import { LOCK_MIGRATIONS, LockModule, LockService, WithLocks, type LockSpec } from 'nestjs-db-locks';

@Controller('ws1')
class Ws1Controller {
  @Get()
  @WithLocks('WS1_READ')
  async read(): Promise<{ ok: boolean }> {
    return { ok: true };
  }
}

@Module({
  imports: [
    TypeOrmModule.forRoot({ type: 'postgres', url: process.env.DATABASE_URL, migrations: [...LOCK_MIGRATIONS], migrationsRun: true }),
    ScheduleModule.forRoot(),
    LockModule.forRoot({ appId: 'consumer-1' }),
  ],
  controllers: [Ws1Controller],
})
class AppModule {}

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
await app.close();
if (!(stamp > 0) || second !== 0) throw new Error('unexpected grants: ' + stamp + ', ' + second);
if (whileHeld.status !== 423 || afterRelease.status !== 200) {
  throw new Error('unexpected HTTP statuses: ' + whileHeld.status + ', ' + afterRelease.status);
}
console.log('consumer ok (' + ${JSON.stringify(OLDEST ? 'oldest peers' : 'current peers')} + '): stamp ' + stamp + ', HTTP 423 while held, 200 after release');
`,
);
run('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error'], app);
run(join(root, 'node_modules/.bin/tsc'), ['-p', 'tsconfig.json'], app);
const installed = ['@nestjs/core', '@nestjs/schedule', '@nestjs/typeorm', 'typeorm', 'pg'].map(
  (name) => `${name}@${JSON.parse(readFileSync(join(app, 'node_modules', name, 'package.json'), 'utf8')).version}`,
);
console.log(`consumer app with ${installed.join(', ')}`);

const parent = mkdtempSync(join(tmpdir(), 'ndl-consumer-pg-'));
const server = process.env.DATABASE_URL ? undefined : await startEmbeddedPostgres({ dataDir: join(parent, 'pg'), persistent: false });
const env = { ...process.env, DATABASE_URL: process.env.DATABASE_URL ?? server?.url };
try {
  process.stdout.write(execFileSync('node', ['dist/main.js'], { cwd: app, env }).toString());
} finally {
  await server?.stop();
  rmSync(work, { recursive: true, force: true });
  rmSync(parent, { recursive: true, force: true });
}
