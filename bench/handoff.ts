import { LockService } from 'nestjs-db-locks';
import { setTimeout as sleep } from 'node:timers/promises';
// Internal to the package: the MySQL listener's fallback poll while an application has waiters, to name the row.
import { POLL_BUSY_MS } from '../lib/store/mysql/mysql-sessions.util.js';
import { bootApplication } from './contenders/library.contender.js';
import { percentile } from './stats.js';

/** Hand-off latency of one way of waiting: from the holder's release call to the waiter's grant. */
export interface HandoffResult {
  readonly name: string;
  readonly samples: number;
  readonly medianMs: number;
  readonly p99Ms: number;
}

const NAME = 'bench_handoff';
/** The common practice the issue compares with (Spring's JdbcLockRegistry polls every 100 ms). */
const POLL_MS = 100;

/**
 * One holder releases, one waiter acquires, `rounds` times, for this library's wait and for a polling loop at 100 ms,
 * each with two application instances (holder and waiter) on the bench database. On MySQL/MariaDB (a `mysql://`
 * URL), where another instance learns of a release from its doorbell (rung by the releasing instance; a poll as the
 * fallback), also with the waiter in the holder's own instance (woken by the release itself), after the first row.
 */
export async function measureHandoff(url: string, rounds: number): Promise<HandoffResult[]> {
  const mysql = url.startsWith('mysql:');
  const holderApp = await bootApplication(url, 'bench-holder');
  const waiterApp = await bootApplication(url, 'bench-waiter');
  try {
    const holder = holderApp.get(LockService);
    const waiter = waiterApp.get(LockService);
    const waitOn = (locks: LockService) => (group: [`${string}_WRITE`]) => locks.tryLocks(group, { waitMs: 10_000 });
    const notified = await handoffs(rounds, holder, waiter, waitOn(waiter));
    const sameInstance = mysql ? await handoffs(rounds, holder, holder, waitOn(holder)) : [];
    const polled = await handoffs(Math.min(rounds, 30), holder, waiter, async (locks) => {
      for (;;) {
        const stamp = await waiter.tryLocks(locks);
        if (stamp > 0) return stamp;
        await sleep(POLL_MS);
      }
    });
    return [
      mysql
        ? summary(`nestjs-db-locks: waitMs, another instance (doorbell; poll every ${POLL_BUSY_MS} ms as fallback)`, notified)
        : summary('nestjs-db-locks: waitMs (LISTEN/NOTIFY)', notified),
      ...(mysql ? [summary('nestjs-db-locks: waitMs, the same instance', sameInstance)] : []),
      summary(`polling loop every ${POLL_MS} ms`, polled),
    ];
  } finally {
    await holderApp.close();
    await waiterApp.close();
  }
}

/** The hand-off table, markdown-friendly. */
export function formatHandoffTable(results: readonly HandoffResult[]): string[] {
  const width = Math.max(39, ...results.map((r) => r.name.length));
  return [
    'Hand-off latency (one holder releases, one waiter acquires; from the release call to the grant):',
    '',
    `| ${'waiting'.padEnd(width)} | samples | median ms | p99 ms |`,
    `|${'-'.repeat(width + 2)}|--------:|----------:|-------:|`,
    ...results.map(
      (r) =>
        `| ${r.name.padEnd(width)} | ${String(r.samples).padStart(7)} | ${r.medianMs.toFixed(2).padStart(9)} | ${r.p99Ms
          .toFixed(2)
          .padStart(6)} |`,
    ),
  ];
}

export async function handoffs(
  rounds: number,
  holder: LockService,
  waiter: LockService,
  acquire: (locks: [`${string}_WRITE`]) => Promise<number>,
): Promise<number[]> {
  const samples: number[] = [];
  for (let i = 0; i < rounds; i++) {
    const held = await holder.tryLocks([`${NAME}_WRITE`]);
    if (held === 0) throw new Error('hand-off bench: the lock is not free');
    let grantedAt = 0;
    const waiting = acquire([`${NAME}_WRITE`]).then((stamp) => {
      grantedAt = performance.now();
      return stamp;
    });
    // A random pause, so that releases do not line up with a polling phase.
    await sleep(30 + Math.random() * POLL_MS);
    const releasedAt = performance.now();
    await holder.releaseLocks(held);
    const stamp = await waiting;
    samples.push(grantedAt - releasedAt);
    await waiter.releaseLocks(stamp);
  }
  return samples;
}

export function summary(name: string, samples: number[]): HandoffResult {
  const sorted = [...samples].sort((a, b) => a - b);
  return { name, samples: sorted.length, medianMs: percentile(sorted, 50), p99Ms: percentile(sorted, 99) };
}
