// A worker of the fault soak (test/support/fault-soak.ts), in a process of its own: it boots a Nest application
// context with LockModule (the built package, as a user's process would) and, until a `stop` line on stdin, waits for
// one of the names in NAMES (write), holds it a random while and releases it: CALLERS such loops at once (1 by
// default; the hot-name soak runs several, so that many callers of one process wait for one name together), each
// waiting WAIT_MS, holding HOLD_MIN_MS + up to HOLD_SPREAD_MS, with LockModule's `waitRecheckMs` WAIT_RECHECK_MS.
// Most holds make a fenced write: in one business transaction it reads the name's counter row FOR UPDATE, adds one, records the write in `soak_ledger` with
// the counter's previous token, calls markBusinessDone and commits. It reports on stdout as JSON lines (a pipe: the
// writes are synchronous, so everything reported before a kill -9 reaches the parent). Times are
// `process.hrtime.bigint()` in ms: CLOCK_MONOTONIC, one clock for every process of the machine.
// Every tryLocks call is reported when it is made (`call`, with its id and waitMs) and when it is answered, at once and
// before anything else is done with the answer: `grant` (a stamp), `busy` (0), or `error` (op tryLocks), each with the
// call's id, so that the test knows which calls were answered and which grants some caller received.
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
const callers = Number(env.CALLERS ?? 1);
const waitMs = Number(env.WAIT_MS ?? 1500);
const holdMinMs = Number(env.HOLD_MIN_MS ?? 20);
const holdSpreadMs = Number(env.HOLD_SPREAD_MS ?? 200);
/**
 * How long, after `stop`, the callers are given to end their iteration on their own before the app closes anyway:
 * a wait ends by its deadline (5 s more at most to resolve a lost answer), a hold within its fenced write's 5 s row
 * lock timeout. A call still pending then is answered by the close: the test finds it answered after `closing`.
 */
const callersStopMs = waitMs + 15_000;

class WorkerModule {}
Module({
  imports: childLockImports({
    appId,
    leaseMs,
    renewIntervalMs: Number(env.RENEW_MS ?? 300),
    reaperIntervalMs: Number(env.REAPER_MS ?? 500),
    queryTimeoutMs: Number(env.QUERY_TIMEOUT_MS ?? 1000),
    waitRecheckMs: Number(env.WAIT_RECHECK_MS ?? 500),
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
/** @type {() => void} */
let stopped = () => undefined;
const stopping = new Promise((resolve) => (stopped = () => resolve(undefined)));
createInterface({ input: process.stdin }).on('line', (line) => {
  if (line.trim() !== 'stop') return;
  running = false;
  stopped();
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

let calls = 0;
/** The calls made and not answered yet, by id. */
const pending = new Set();

/** One caller: until `stop`, waits for a name, holds it, releases it. @param {number} index */
async function caller(index) {
  while (running) {
    const name = names[Math.floor(Math.random() * names.length)];
    const call = `${index}:${++calls}`;
    let stamp = 0;
    const asked = now();
    pending.add(call);
    report({ event: 'call', call, waitMs, at: asked });
    try {
      stamp = await locks.tryLocks([`${name}_WRITE`], { waitMs });
    } catch (/** @type {any} */ error) {
      pending.delete(call);
      failure('tryLocks', error, { call, at: now(), waitedMs: now() - asked, outcomeUnknown: error?.outcomeUnknown === true });
      await sleep(20);
      continue;
    }
    pending.delete(call);
    if (stamp === 0) {
      report({ event: 'busy', call, at: now() });
      continue;
    }
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
    report({ event: 'grant', call, stamp, name, held: confirm(), at: now() });
    const until = now() + holdMinMs + Math.random() * holdSpreadMs;
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
}

const looping = Promise.all(Array.from({ length: callers }, (_, i) => caller(i + 1)));
await stopping;
// Every caller ends its iteration by itself (its call answered by its own deadline); one that does not within
// `callersStopMs` is left pending, and the app closes anyway.
const ended = await Promise.race([looping.then(() => true), sleep(callersStopMs, false)]);
if (!ended) report({ event: 'callers-stuck', pending: [...pending] });

const closing = now();
report({ event: 'closing' });
// A close that lasts says where it is (the harness gives up at 30 s and quotes the last of these).
for (const afterMs of [10_000, 25_000]) setTimeout(() => report({ event: 'close-stall', afterMs, ...describeClose() }), afterMs).unref();
await app.close();
report({ event: 'closed', ms: now() - closing });
process.exit(0);
