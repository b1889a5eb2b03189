// A replica under a rolling deploy, for the shutdown tests: it boots a Nest application context with LockModule (the
// built package) and `enableShutdownHooks()`, takes LOCK through `acquireLocks` and holds it in a block that ends when
// the handle's signal fires (MODE=finish: it finishes for FINISH_MS, then releases as the end of an `await using`
// block does) or never (MODE=ignore: it keeps the handle past the shutdown's grace period). It reports on stdout as
// JSON lines: `held`, `told` (the signal's reason, and whether the grant was still held), `finished`, `released`,
// `shutdown` (the application's onApplicationShutdown, after the library's shutdown) with the result of a release made
// then, and `log` for every warning or error the application logs. The test sends SIGTERM.
import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { LockService } from 'nestjs-db-locks';
import { setTimeout as sleep } from 'node:timers/promises';
import { childLockImports } from './child-database.mjs';

/** @param {Record<string, unknown>} event */
const report = (event) => process.stdout.write(`${JSON.stringify(event)}\n`);
const env = process.env;

/** @type {import('nestjs-db-locks').LockGrantHandle | undefined} */
let grant;

/** The application's own shutdown hook: it runs after the library's `beforeApplicationShutdown`. */
class LateRelease {
  async onApplicationShutdown() {
    const outcome = await grant?.release().then(
      () => 'resolved',
      (/** @type {Error} */ error) => error.name,
    );
    report({ event: 'shutdown', lateRelease: outcome });
  }
}

class DeployModule {}
Module({
  imports: childLockImports({
    appId: env.APP_ID ?? 'deploy',
    shutdownGraceMs: env.GRACE_MS ? Number(env.GRACE_MS) : undefined,
    reaperIntervalMs: 0,
  }),
  providers: [LateRelease],
})(DeployModule);

/** Every warning and error the application logs, as `log` events. */
const logger = {
  log() {},
  /** @param {unknown} message */
  warn: (message) => report({ event: 'log', level: 'warn', message: String(message) }),
  /** @param {unknown} message */
  error: (message) => report({ event: 'log', level: 'error', message: String(message) }),
};
const app = await NestFactory.createApplicationContext(DeployModule, { logger });
app.enableShutdownHooks();
const locks = app.get(LockService);

grant = await locks.acquireLocks(/** @type {never} */ ([env.LOCK ?? 'DEPLOY_WRITE']));
if (!grant) throw new Error('the lock was not available');
const { stamp, signal } = grant;
report({ event: 'held', stamp });
try {
  await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
  report({ event: 'told', reason: /** @type {Error} */ (signal.reason).name, held: locks.isHeld(stamp) });
  if (env.MODE === 'ignore') await new Promise(() => undefined); // never leaves the block
  await sleep(Number(env.FINISH_MS ?? 300)); // the last of the work, under the locks
  report({ event: 'finished', held: locks.isHeld(stamp) });
} finally {
  await grant[Symbol.asyncDispose](); // what the end of an `await using` block calls
  report({ event: 'released' });
}
