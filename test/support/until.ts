import { setTimeout as sleep } from 'node:timers/promises';

/** Polls `predicate` every 25 ms until it holds; throws after `timeoutMs`. */
export async function until(predicate: () => Promise<boolean> | boolean, timeoutMs = 8000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await predicate())) {
    if (Date.now() > deadline) throw new Error('timed out');
    await sleep(25);
  }
}
