import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Contender, ContenderSession } from './contender.js';
import { type BenchLockService, lockServiceSession, POOL_MAX } from './library.contender.js';

/** What the bench needs of another checkout's build: Nest, TypeORM's and the scheduler's modules, and the library. */
interface BaselinePackages {
  readonly Module: (metadata: object) => ClassDecorator;
  readonly createContext: (module: object) => Promise<BaselineApplication>;
  readonly TypeOrmModule: { forRoot(options: object): object };
  readonly ScheduleModule: { forRoot(): object };
  readonly LockModule: { forRoot(options: object): object };
  readonly LockService: object;
}

interface BaselineApplication {
  get<T>(token: object): T;
  close(): Promise<void>;
}

/** Imports `specifier` as the checkout at `root` resolves it (its own node_modules, its own build). */
async function importFrom<T>(root: string, specifier: string): Promise<T> {
  const path = specifier.startsWith('.') ? join(root, specifier) : createRequire(join(root, 'package.json')).resolve(specifier);
  return (await import(pathToFileURL(path).href)) as T;
}

async function loadBaseline(root: string): Promise<BaselinePackages> {
  const common = await importFrom<{ Module: BaselinePackages['Module'] }>(root, '@nestjs/common');
  const core = await importFrom<{
    NestFactory: { createApplicationContext(module: object, options: object): Promise<BaselineApplication> };
  }>(root, '@nestjs/core');
  const typeorm = await importFrom<{ TypeOrmModule: BaselinePackages['TypeOrmModule'] }>(root, '@nestjs/typeorm');
  const schedule = await importFrom<{ ScheduleModule: BaselinePackages['ScheduleModule'] }>(root, '@nestjs/schedule');
  const library = await importFrom<{ LockModule: BaselinePackages['LockModule']; LockService: object }>(
    root,
    './dist/index.js',
  );
  return {
    Module: common.Module,
    createContext: (module) => core.NestFactory.createApplicationContext(module, { logger: false }),
    TypeOrmModule: typeorm.TypeOrmModule,
    ScheduleModule: schedule.ScheduleModule,
    LockModule: library.LockModule,
    LockService: library.LockService,
  };
}

/** The commit of the checkout at `root`, for the contender's name (`unknown` outside git). */
function commitOf(root: string): string {
  try {
    return execFileSync('git', ['-C', root, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
  } catch {
    return 'unknown';
  }
}

/**
 * `BENCH_BASELINE=<another checkout, built>`: the library of that checkout (its `dist/` and its own `node_modules`),
 * wired like the library contender, so that a change is measured against the code before it in the same interleaved
 * rounds (the two sides share every disk hiccup, which separate runs do not). PostgreSQL only; the bench database
 * is migrated by this checkout, so the baseline must run on the same or an older schema.
 */
export function baselineContender(url: string, root: string): Contender {
  const absolute = resolve(root);
  if (!existsSync(join(absolute, 'dist', 'index.js'))) {
    throw new Error(`BENCH_BASELINE=${root}: no dist/index.js there (run npm ci and npm run build in that checkout)`);
  }
  const packages = loadBaseline(absolute);
  return {
    id: 'library-baseline',
    name: `LockService at ${commitOf(absolute)} (BENCH_BASELINE)`,
    async open(workload): Promise<ContenderSession> {
      const { Module, createContext, TypeOrmModule, ScheduleModule, LockModule, LockService } = await packages;
      class BaselineBenchModule {}
      Module({
        imports: [
          TypeOrmModule.forRoot({ type: 'postgres', url, extra: { max: POOL_MAX } }),
          ScheduleModule.forRoot(),
          LockModule.forRoot({ appId: 'bench' }),
        ],
      })(BaselineBenchModule);
      const app = await createContext(BaselineBenchModule);
      return lockServiceSession(app.get<BenchLockService>(LockService), workload, () => app.close());
    },
  };
}
