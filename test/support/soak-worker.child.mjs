// A worker of the fault soak (test/support/fault-soak.ts), in a process of its own: it boots a Nest application
// context with LockModule (the built package, as a user's process would) and, until a `stop` line on stdin, waits for
// one of the names in NAMES (write), holds it a random while and releases it. Most holds make a fenced write: in one
// business transaction it reads the name's counter row FOR UPDATE, adds one, records the write in `soak_ledger` with
// the counter's previous token, calls markBusinessDone and commits. It reports on stdout as JSON lines (a pipe: the
// writes are synchronous, so everything reported before a kill -9 reaches the parent). Times are
// `process.hrtime.bigint()` in ms: CLOCK_MONOTONIC, one clock for every process of the machine.
// A hold interval (`hold`) covers only the moments the holder proved itself holding: each end is a time taken
// just before an `isHeld(stamp)` that said true while the grant's signal had not fired.
import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { LockError, LockService } from 'nestjs-db-locks';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { childLockImports, isMysql } from './child-database.mjs';
import { watchClose } from './close-watch.mjs';
import { DataSource } from 'typeorm';

/** @param {Record<string, unknown>} event */
const report = (event) => process.stdout.write(`${JSON.stringify(event)}\n`);
const now = () => Number(process.hrtime.bigint()) / 1e6;
const env = process.env;
/** @param {number} n the placeholder's number */
const p = (n) => (isMysql ? '?' : `$${n}`);
const appId = env.APP_ID ?? 'soak';
const names = (env.NAMES ?? 'S1').split(',');
const leaseMs = Number(env.LEASE_MS ?? 2000);

class WorkerModule {}
Module({
  imports: childLockImports({
    appId,
    leaseMs,
    renewIntervalMs: Number(env.RENEW_MS ?? 300),
    reaperIntervalMs: Number(env.REAPER_MS ?? 500),
    queryTimeoutMs: Number(env.QUERY_TIMEOUT_MS ?? 1000),
    waitRecheckMs: 500,
  }),
})(WorkerModule);

let app;
try {
  app = await NestFactory.createApplicationContext(WorkerModule, { logger: false });
} catch (/** @type {any} */ error) {
  report({ event: 'start-failed', error: `${error?.name}: ${error?.message}` });
  process.exit(3);
}
const locks = app.get(LockService);
const dataSource = app.get(DataSource);
const describeClose = watchClose(app, dataSource);
report({ event: 'started', at: now() });

let running = true;
createInterface({ input: process.stdin }).on('line', (line) => {
  if (line.trim() === 'stop') running = false;
});

/**
 * Records a library call's failure: typed (a LockError, with whether its outcome is unknown) or not.
 * @param {string} op @param {any} error @param {Record<string, unknown>} [extra]
 */
const failure = (op, error, extra = {}) =>
  report({
    event: 'error',
    op,
    typed: error instanceof LockError,
    name: error?.name,
    code: error?.code,
    message: String(error?.message).slice(0, 200),
    ...extra,
  });

let writes = 0;
/**
 * The fenced write of a hold: resolves with whether its commit was acknowledged.
 * @param {number} stamp @param {string} name
 */
async function fencedWrite(stamp, name) {
  const id = `${appId}:${process.pid}:${++writes}`;
  const runner = dataSource.createQueryRunner();
  let committing = false;
  try {
    await runner.connect();
    await runner.startTransaction();
    // A business transaction behind a row lock gives up after 5 s (MariaDB's default is 50 s), as a service's would.
    await runner.query(isMysql ? 'SET SESSION innodb_lock_wait_timeout = 5' : "SET LOCAL lock_timeout = '5s'");
    const [row] = await runner.query(`SELECT token FROM soak_counter WHERE name = ${p(1)} FOR UPDATE`, [name]);
    await runner.query(`UPDATE soak_counter SET n = n + 1, token = ${p(1)} WHERE name = ${p(2)}`, [stamp, name]);
    await runner.query(
      `INSERT INTO soak_ledger (id, name, token, prev_token) VALUES (${p(1)}, ${p(2)}, ${p(3)}, ${p(4)})`,
      [id, name, stamp, Number(row.token)],
    );
    await sleep(Math.random() * 40); // the rest of the business work, before the fence
    try {
      await locks.markBusinessDone(stamp, runner.manager);
    } catch (error) {
      failure('markBusinessDone', error, { stamp });
      throw error;
    }
    committing = true;
    report({ event: 'committing', id, stamp });
    await runner.commitTransaction();
    report({ event: 'commit', id, stamp, name });
    return true;
  } catch (/** @type {any} */ error) {
    if (committing) report({ event: 'commit-unknown', id, stamp, message: String(error?.message).slice(0, 200) });
    if (runner.isTransactionActive && !committing) await runner.rollbackTransaction().catch(() => undefined);
    return false;
  } finally {
    await runner.release().catch(() => undefined);
  }
}

while (running) {
  const name = names[Math.floor(Math.random() * names.length)];
  let stamp = 0;
  const asked = now();
  try {
    stamp = await locks.tryLocks([`${name}_WRITE`], { waitMs: 1500 });
  } catch (/** @type {any} */ error) {
    failure('tryLocks', error, { waitedMs: now() - asked, outcomeUnknown: error?.outcomeUnknown === true });
    await sleep(20);
    continue;
  }
  if (stamp === 0) continue;
  const signal = locks.getSignal(stamp);
  signal.addEventListener('abort', () => report({ event: 'signal', stamp, at: now(), reason: signal.reason?.name }));
  let from;
  let to;
  /** Takes a time, then proves the grant held at it. */
  const confirm = () => {
    const at = now();
    if (signal.aborted || !locks.isHeld(stamp)) return false;
    from ??= at;
    to = at;
    return true;
  };
  report({ event: 'grant', stamp, name, held: confirm(), at: now() });
  const until = now() + 20 + Math.random() * 200;
  if (Math.random() < 0.7 && confirm()) {
    await fencedWrite(stamp, name);
    confirm();
  }
  // A holder that works under its grant: before each step it asks whether it still holds it (also after a pause).
  while (confirm() && now() < until) await sleep(5);
  if (from !== undefined) report({ event: 'hold', stamp, name, from, to });
  report({ event: 'release-call', stamp, at: now() });
  try {
    await locks.releaseLocks(stamp);
    report({ event: 'released', stamp, at: now() });
  } catch (error) {
    failure('releaseLocks', error, { stamp });
  }
}

const closing = now();
report({ event: 'closing' });
// A close that lasts says where it is (the harness gives up at 30 s and quotes the last of these).
for (const afterMs of [10_000, 25_000]) setTimeout(() => report({ event: 'close-stall', afterMs, ...describeClose() }), afterMs).unref();
await app.close();
report({ event: 'closed', ms: now() - closing });
process.exit(0);
