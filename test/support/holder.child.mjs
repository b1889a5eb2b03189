// A lock holder in a process of its own, for crash tests: it boots a Nest application context with LockModule (the
// built package, as a user's process would), takes the locks in LOCKS, and reports on stdout as JSON lines. With
// MODE=business it then opens a business transaction, inserts a row into `business`, reports `wrote`, and waits for
// a `commit` line on stdin before calling markBusinessDone and committing. With MODE=fenced it does the same through
// a `@WithLocks({ locks: (loanId) => …, transaction: true })` method instead (LOCKS names the loan id): the library
// opens the transaction, fences and commits when the method returns. In every mode it reports `signal` when its
// grant's signal fires, and answers a `check` line with `state` (whether it believes it holds the grant).
import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ScheduleModule } from '@nestjs/schedule';
import { TypeOrmModule } from '@nestjs/typeorm';
import { LockModule, LockService, WithLocks } from 'nestjs-db-locks';
import { createInterface } from 'node:readline';
import { DataSource } from 'typeorm';

/** @param {Record<string, unknown>} event */
const report = (event) => process.stdout.write(`${JSON.stringify(event)}\n`);
const env = process.env;

class HolderModule {}
/** A `mysql://` URL: the holder runs on MariaDB/MySQL. */
const mysql = (env.DATABASE_URL ?? '').startsWith('mysql:');
/** The business row's INSERT, in the dialect's placeholders. */
const INSERT_BUSINESS = `INSERT INTO business (writer, stamp) VALUES (${mysql ? '?, ?' : '$1, $2'})`;
Module({
  imports: [
    mysql
      ? TypeOrmModule.forRoot({ type: 'mariadb', url: env.DATABASE_URL, timezone: 'Z', extra: { connectionLimit: 3 } })
      : TypeOrmModule.forRoot({ type: 'postgres', url: env.DATABASE_URL, extra: { max: 3 } }),
    ScheduleModule.forRoot(),
    LockModule.forRoot({
      ...(mysql ? { dialect: 'mysql' } : {}),
      appId: env.APP_ID ?? 'holder',
      leaseMs: Number(env.LEASE_MS ?? 30000),
      renewIntervalMs: env.RENEW_MS ? Number(env.RENEW_MS) : undefined,
      reaperIntervalMs: 0,
    }),
  ],
})(HolderModule);

const app = await NestFactory.createApplicationContext(HolderModule, { logger: ['error'] });
const locks = app.get(LockService);
const lines = createInterface({ input: process.stdin });

if (env.MODE === 'fenced') {
  /** The business of a loan, as a user declares it (decorators applied by hand: this file is plain JavaScript). */
  class Repayments {
    /** @param {number} loanId */
    async repay(loanId) {
      const { stamp } = /** @type {{ stamp: number }} */ (locks.currentLock());
      await locks.currentManager().query(INSERT_BUSINESS, [env.APP_ID, stamp]);
      report({ event: 'wrote', stamp, loanId });
      for await (const line of lines) if (line.trim() === 'commit') return;
    }
  }
  const descriptor = /** @type {PropertyDescriptor} */ (Object.getOwnPropertyDescriptor(Repayments.prototype, 'repay'));
  WithLocks({ locks: (/** @type {number} */ loanId) => [`LOAN:${loanId}_WRITE`], transaction: true })(
    Repayments.prototype,
    'repay',
    /** @type {never} an untyped descriptor: the parameter check is for TypeScript methods */ (descriptor),
  );
  Object.defineProperty(Repayments.prototype, 'repay', descriptor);
  try {
    await new Repayments().repay(Number(env.LOCKS ?? 7));
    report({ event: 'committed' });
  } catch (error) {
    report({ event: 'lost', error: /** @type {Error} */ (error).name });
  }
  await app.close();
  process.exit(0);
}

const stamp = await locks.tryLocks(/** @type {never} */ ((env.LOCKS ?? 'HELD_WRITE').split(',')));
report({ event: 'held', stamp });
// The grant's signal, as its holder watches it; and `check` on stdin asks whether the holder believes it holds it.
const signal = locks.getSignal(stamp);
signal.addEventListener('abort', () => report({ event: 'signal', reason: /** @type {Error} */ (signal.reason).name }));
lines.on('line', (line) => {
  if (line.trim() === 'check') report({ event: 'state', held: locks.isHeld(stamp) });
});

if (env.MODE === 'business') {
  const dataSource = app.get(DataSource);
  const runner = dataSource.createQueryRunner();
  await runner.connect();
  await runner.startTransaction();
  await runner.query(INSERT_BUSINESS, [env.APP_ID, stamp]);
  report({ event: 'wrote' });
  for await (const line of lines) {
    if (line.trim() !== 'commit') continue;
    try {
      await locks.markBusinessDone(stamp, runner.manager);
      await runner.commitTransaction();
      report({ event: 'committed' });
    } catch (error) {
      await runner.rollbackTransaction();
      report({ event: 'lost', error: /** @type {Error} */ (error).name });
    }
    await runner.release();
    await app.close();
    process.exit(0);
  }
}
