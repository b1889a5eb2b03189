// A replica of a fleet that elects a leader, for the leader-election specs: it boots a Nest application context with
// LockModule (the built package) and `enableShutdownHooks()`, and a provider whose `@Leader(ROLE)` method leads until
// its signal fires, then finishes for FINISH_MS (still leading the role) and returns. It reports on stdout as JSON
// lines, each with `t` (the machine's monotonic clock, in ms): `ready` once the application has started,
// `start` (the term's token) when it is elected, `stop` (the signal's reason) at the instant its signal fires,
// `finished` when the method returns, `beat` every HEARTBEAT_MS while it leads (it believes it does at that instant),
// `resigned` after a `resign` line on stdin (it then stands again at the back of the queue), and `log` for every
// warning and error the application logs. The spec sends SIGTERM, SIGKILL, SIGSTOP and SIGCONT.
import 'reflect-metadata';
import { Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { childLockImports, reportingLogger } from './child-app.mjs';

const { Leader, LeaderService, LockModule } = await import(new URL('../../dist/index.js', import.meta.url).href);

const env = process.env;
const role = env.ROLE ?? 'leader-spec';
/** The machine's monotonic clock (CLOCK_MONOTONIC, one for every process of the machine), in ms with a fraction. */
const now = () => Number(process.hrtime.bigint()) / 1e6;
/** @param {Record<string, unknown>} event */
const report = (event) => process.stdout.write(`${JSON.stringify({ ...event, t: now() })}\n`);

class Replica {
  /**
   * @param {AbortSignal} signal
   * @param {{ token: number }} term
   */
  async lead(signal, term) {
    report({ event: 'start', token: term.token });
    await new Promise((resolve) => {
      const told = () => {
        report({ event: 'stop', token: term.token, reason: /** @type {Error} */ (signal.reason).name });
        resolve(undefined);
      };
      if (signal.aborted) told();
      else signal.addEventListener('abort', told, { once: true });
    });
    await sleep(Number(env.FINISH_MS ?? 0));
    report({ event: 'finished', token: term.token });
  }
}
Injectable()(Replica);
const lead = /** @type {PropertyDescriptor} */ (Object.getOwnPropertyDescriptor(Replica.prototype, 'lead'));
Leader(role, { rejoinDelayMs: 0 })(Replica.prototype, 'lead', lead);

class ReplicaModule {}
Module({
  imports: childLockImports(LockModule, {
    appId: env.APP_ID ?? 'replica',
    leaseMs: Number(env.LEASE_MS ?? 3000),
    reaperIntervalMs: Number(env.REAPER_MS ?? 1000),
    // Far longer than any hand-over the spec allows: a candidate is woken by the database, not by its re-check.
    waitRecheckMs: 60_000,
    shutdownGraceMs: 10_000,
  }),
  providers: [Replica],
})(ReplicaModule);

const app = await NestFactory.createApplicationContext(ReplicaModule, { logger: reportingLogger(report) });
app.enableShutdownHooks();
const leaders = app.get(LeaderService);
const replica = app.get(Replica);

createInterface({ input: process.stdin }).on('line', (line) => {
  if (line !== 'resign') return;
  void leaders.resign(role).then(() => {
    report({ event: 'resigned' });
    leaders.campaign(role, (/** @type {AbortSignal} */ signal, /** @type {{ token: number }} */ term) => replica.lead(signal, term), {
      rejoinDelayMs: 0,
    });
  });
});
// A heartbeat, as work that acts on a timer would: `beat` says whether the replica believes it leads at that instant
// (`isLeader`, which reads the clock: after a pause, it knows before any timer has told the signal).
if (env.HEARTBEAT_MS) {
  setInterval(() => leaders.isLeader(role) && report({ event: 'beat' }), Number(env.HEARTBEAT_MS));
}
report({ event: 'ready' });
