// A contender in a process of its own, for the fairness test: it boots a Nest application context with LockModule
// (the built package) and, on a `go` line on stdin, loops for DURATION_MS: waits for LOCK (waitMs WAIT_MS), holds it
// HOLD_MS, releases it, and goes again at once. It then reports its grants, its timed-out waits and its waits' times.
import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { LockService } from 'nestjs-db-locks';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { childLockImports } from './child-database.mjs';

/** @param {Record<string, unknown>} event */
const report = (event) => process.stdout.write(`${JSON.stringify(event)}\n`);
const env = process.env;

class ContenderModule {}
Module({ imports: childLockImports({ appId: env.APP_ID ?? 'contender' }) })(ContenderModule);

const app = await NestFactory.createApplicationContext(ContenderModule, { logger: ['error'] });
const locks = app.get(LockService);
report({ event: 'started' });

const lines = createInterface({ input: process.stdin });
for await (const line of lines) {
  if (line.trim() === 'go') break;
}
const duration = Number(env.DURATION_MS ?? 20_000);
const waitMs = Number(env.WAIT_MS ?? 2_000);
const holdMs = Number(env.HOLD_MS ?? 3);
/** @type {number[]} */
const waits = [];
let grants = 0;
let timeouts = 0;
/** @type {string[]} */
const errors = [];
const end = performance.now() + duration;
const worker = async () => {
  while (performance.now() < end) {
    const asked = performance.now();
    try {
      const stamp = await locks.tryLocks(/** @type {never} */ ([env.LOCK ?? 'FAIR_WRITE']), { waitMs });
      waits.push(performance.now() - asked);
      if (stamp === 0) {
        timeouts++;
        continue;
      }
      grants++;
      await sleep(holdMs);
      await locks.releaseLocks(stamp);
    } catch (error) {
      errors.push(String(error));
    }
  }
};
await Promise.all(Array.from({ length: Number(env.WORKERS ?? 1) }, worker));
waits.sort((a, b) => a - b);
report({
  event: 'done',
  grants,
  timeouts,
  errors,
  maxWaitMs: Math.round(waits.at(-1) ?? 0),
  meanWaitMs: Math.round(waits.reduce((sum, wait) => sum + wait, 0) / Math.max(1, waits.length)),
  p99WaitMs: Math.round(waits[Math.floor(waits.length * 0.99)] ?? 0),
});
lines.close();
process.stdin.destroy();
await app.close();
