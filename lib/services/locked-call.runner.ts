import { Logger } from '@nestjs/common';
import { isObservable, Observable } from 'rxjs';
import { LockNotAcquiredError, LockUpgradeError } from '../errors/index.js';
import type { LockMode, LockRequest } from '../interfaces/index.js';
import type { ResolvedWithLocks } from '../utils/resolve-with-locks-options.util.js';
import { LockContext } from './lock-context.storage.js';

/** What the runner needs from `LockService` (kept narrow to avoid a cycle). @internal */
export interface LockHolder {
  tryLocks(locks: Iterable<LockRequest>, options?: { waitMs?: number }): Promise<number>;
  releaseLocks(stamp: number): Promise<void>;
}

/** One call of a locked method. @internal */
export interface LockedCall<T> {
  /** `Class.method`, for messages and logs. */
  readonly target: string;
  readonly lock: ResolvedWithLocks;
  /** `'skip'` or `'throw'` once defaults are applied. */
  readonly onUnavailable: 'skip' | 'throw';
  readonly call: () => T;
}

const logger = new Logger('WithLocks');

/**
 * Takes the group (minus what the calling chain already holds), runs the call inside the re-entrancy context, and
 * releases the group when the call settles: a returned Promise resolves or rejects, or a returned Observable
 * completes, errors or is unsubscribed. The release is awaited before the result is handed on. The call's own errors
 * pass through unchanged; a failed release after a successful call is logged and thrown.
 * @internal
 */
export async function runLocked<T>(holder: LockHolder, locked: LockedCall<T>): Promise<unknown> {
  const held = LockContext.held(holder);
  const needed = locked.lock.requests.filter((request) => {
    const mode = held.get(request.name);
    if (mode === 'read' && request.mode === 'write') throw new LockUpgradeError(request.name, locked.target);
    return mode === undefined;
  });
  if (needed.length === 0) return locked.call();

  const stamp = await holder.tryLocks(needed, { waitMs: locked.lock.waitMs ?? 0 });
  if (stamp === 0) {
    if (locked.onUnavailable === 'skip') {
      logger.log(`Skipped ${locked.target}: ${needed.map((l) => `${l.name}_${l.mode.toUpperCase()}`).join(', ')} held elsewhere`);
      return undefined;
    }
    throw new LockNotAcquiredError(needed, locked.target, locked.lock.retryAfterSeconds);
  }

  const nowHeld = new Map<string, LockMode>(held);
  for (const request of needed) nowHeld.set(request.name, request.mode);
  let released: Promise<void> | undefined;
  const release = () => (released ??= holder.releaseLocks(stamp));

  let result: unknown;
  try {
    result = await LockContext.run(holder, { held: nowHeld, stamp }, () => {
      const value = locked.call();
      return isObservable(value) ? value : Promise.resolve(value);
    });
  } catch (error) {
    await release().catch((releaseError: unknown) => logReleaseFailure(locked.target, stamp, releaseError));
    throw error;
  }
  if (isObservable(result)) return holdUntilSettled(result, holder, nowHeld, release, locked.target, stamp);
  try {
    await release();
  } catch (releaseError) {
    logReleaseFailure(locked.target, stamp, releaseError);
    throw releaseError;
  }
  return result;
}

/** Keeps the group for the life of the Observable; completion and errors are forwarded after the release. */
function holdUntilSettled(
  source: Observable<unknown>,
  holder: LockHolder,
  held: ReadonlyMap<string, LockMode>,
  release: () => Promise<void>,
  target: string,
  stamp: number,
): Observable<unknown> {
  return new Observable((subscriber) => {
    const subscription = LockContext.run(holder, { held, stamp }, () =>
      source.subscribe({
        next: (value) => subscriber.next(value),
        error: (error: unknown) =>
          void release().then(
            () => subscriber.error(error),
            (releaseError: unknown) => {
              logReleaseFailure(target, stamp, releaseError);
              subscriber.error(error);
            },
          ),
        complete: () =>
          void release().then(
            () => subscriber.complete(),
            (releaseError: unknown) => {
              logReleaseFailure(target, stamp, releaseError);
              subscriber.error(releaseError);
            },
          ),
      }),
    );
    return () => {
      subscription.unsubscribe();
      release().catch((releaseError: unknown) => logReleaseFailure(target, stamp, releaseError));
    };
  });
}

function logReleaseFailure(target: string, stamp: number, error: unknown): void {
  logger.error(`${target}: releasing locks of stamp ${stamp} failed: ${(error as Error)?.message ?? String(error)}`);
}
