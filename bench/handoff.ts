import { LockService } from 'nestjs-db-locks';
import { setTimeout as sleep } from 'node:timers/promises';
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
 * One holder releases, one waiter acquires, `rounds` times, for this library's notified wait and for a polling loop
 * at 100 ms, each with two application instances (holder and waiter) on the bench database.
 */
export async function measureHandoff(url: string, rounds: number): Promise<HandoffResult[]> {
  const holderApp = await bootApplication(url, 'bench-holder');
  const waiterApp = await bootApplication(url, 'bench-waiter');
  try {
    const holder = holderApp.get(LockService);
    const waiter = waiterApp.get(LockService);
    const notified = await handoffs(rounds, holder, waiter, (locks) => waiter.tryLocks(locks, { waitMs: 10_000 }));
    const polled = await handoffs(Math.min(rounds, 30), holder, waiter, async (locks) => {
      for (;;) {
        const stamp = await waiter.tryLocks(locks);
        if (stamp > 0) return stamp;
        await sleep(POLL_MS);
      }
    });
    return [
      summary('nestjs-db-locks: waitMs (LISTEN/NOTIFY)', notified),
      summary(`polling loop every ${POLL_MS} ms`, polled),
    ];
  } finally {
    await holderApp.close();
    await waiterApp.close();
  }
}

async function handoffs(
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

function summary(name: string, samples: number[]): HandoffResult {
  const sorted = [...samples].sort((a, b) => a - b);
  return { name, samples: sorted.length, medianMs: percentile(sorted, 50), p99Ms: percentile(sorted, 99) };
}
