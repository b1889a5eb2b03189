import type { LockService } from 'nestjs-db-locks';

/**
 * Grant, refuse, wait, release and grant again: what the engine must do at every version of the schema the
 * migrations leave (a migration spec calls it after each step).
 */
export async function exerciseEngine(locks: LockService): Promise<void> {
  const stamp = await locks.tryLocks(['M_WRITE', 'N_READ']);
  expect(stamp).toBeGreaterThan(0);
  expect(await locks.tryLocks(['M_READ'])).toBe(0);
  expect(await locks.tryLocks(['N_READ'])).toBe(0); // read permits 1 (default)
  expect(await locks.tryLocks(['M_READ'], { waitMs: 50 })).toBe(0); // registers, waits, gives up, unregisters
  await locks.releaseLocks(stamp);
  const again = await locks.tryLocks(['M_READ']);
  expect(again).toBeGreaterThan(stamp);
  await locks.releaseLocks(again);
}
