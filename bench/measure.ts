import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Contender, ContenderClient } from './contenders/contender.js';
import type { Sample } from './stats.js';
import type { Workload } from './workloads.js';

/** Timing of one measurement. */
export interface MeasureOptions {
  readonly warmupMs: number;
  readonly durationMs: number;
}

/**
 * Opens a session of `contender`, runs `workload.clients` loops of it for warm-up + duration, and counts what completes
 * inside the measured window. Every loop finishes (and releases) its current attempt before the session closes.
 */
export async function measure(contender: Contender, workload: Workload, options: MeasureOptions): Promise<Sample> {
  const session = await contender.open(workload);
  try {
    const started = performance.now();
    const windowStart = started + options.warmupMs;
    const windowEnd = windowStart + options.durationMs;
    const latencies: number[] = [];
    let granted = 0;
    let busy = 0;
    let stopped = false;

    const loop = async (client: ContenderClient): Promise<void> => {
      while (!stopped) {
        const group = workload.nextGroup();
        const t0 = performance.now();
        const ok = await client.attempt(group);
        const t1 = performance.now();
        if (t1 > windowEnd) return;
        if (t1 < windowStart) continue;
        if (ok) {
          granted++;
          latencies.push(t1 - t0);
        } else {
          busy++;
        }
      }
    };

    const sampleRetries = async (): Promise<number> => {
      await sleep(Math.max(0, windowStart - performance.now()));
      const before = session.retries();
      await sleep(Math.max(0, windowEnd - performance.now()));
      return session.retries() - before;
    };

    const loops = session.clients.map((client) =>
      loop(client).catch((error: unknown) => {
        stopped = true;
        throw error;
      }),
    );
    const [retries] = await Promise.all([sampleRetries(), ...loops]);
    latencies.sort((a, b) => a - b);
    return {
      seconds: options.durationMs / 1000,
      granted,
      busy,
      retries,
      latencies,
    };
  } finally {
    await session.close();
  }
}
