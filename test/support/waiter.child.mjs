// A waiter in a process of its own, for shutdown tests: it boots a Nest application context with LockModule (the
// built package, as a user's process would) and waits for the locks in LOCKS with a long waitMs and re-check. On a
// `close` line on stdin it stops reading stdin and closes the application, reports how the wait ended (`closed`),
// and then does nothing more: the process must exit by itself, with nothing left keeping it alive.
import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ScheduleModule } from '@nestjs/schedule';
import { TypeOrmModule } from '@nestjs/typeorm';
import { LockModule, LockService } from 'nestjs-db-locks';
import { createInterface } from 'node:readline';

/** @param {Record<string, unknown>} event */
const report = (event) => process.stdout.write(`${JSON.stringify(event)}\n`);
const env = process.env;

class WaiterModule {}
/** A `mysql://` URL: the waiter runs on MariaDB/MySQL. */
const mysql = (env.DATABASE_URL ?? '').startsWith('mysql:');
Module({
  imports: [
    mysql
      ? TypeOrmModule.forRoot({ type: 'mariadb', url: env.DATABASE_URL, timezone: 'Z', extra: { connectionLimit: 3 } })
      : TypeOrmModule.forRoot({ type: 'postgres', url: env.DATABASE_URL, extra: { max: 3 } }),
    ScheduleModule.forRoot(),
    LockModule.forRoot({ ...(mysql ? { dialect: 'mysql' } : {}), appId: env.APP_ID ?? 'waiter', waitRecheckMs: 60_000 }),
  ],
})(WaiterModule);

const app = await NestFactory.createApplicationContext(WaiterModule, { logger: ['error'] });
const locks = app.get(LockService);
let ended = 'pending';
locks
  .tryLocks(/** @type {never} */ ((env.LOCKS ?? 'HELD_WRITE').split(',')), { waitMs: 600_000 })
  .then(
    (stamp) => (ended = `granted ${stamp}`),
    (error) => (ended = /** @type {Error} */ (error).name),
  );
report({ event: 'started' });

const lines = createInterface({ input: process.stdin });
for await (const line of lines) {
  if (line.trim() !== 'close') continue;
  lines.close();
  process.stdin.destroy();
  await app.close();
  report({ event: 'closed', wait: ended });
  break;
}
