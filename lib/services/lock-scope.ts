import { Logger } from '@nestjs/common';
import { IllegalMonitorStateError, LockNotAcquiredError, LockUpgradeError } from '../errors/index.js';
import type { DataSource, EntityManager } from 'typeorm';
import type { LockMode, LockRequest, LockTransactionRunner } from '../interfaces/index.js';
import type { ResolvedLockTransaction, ResolvedWithLocks } from '../utils/resolve-with-locks-options.util.js';
import type { BusyLock } from '../store/lock.store.js';
import type { CommitOutcome } from './held-grant.state.js';
import { ChainGrant, LockContext } from './lock-context.storage.js';
import type { ShutdownHolder } from './locked-calls.tracker.js';

/** What the runner needs from `LockService` (kept narrow to avoid a cycle; also the re-entrancy key). @internal */
export interface LockHolder {
  tryLocks(locks: Iterable<LockRequest>, options?: { waitMs?: number; signal?: AbortSignal }): Promise<number>;
  releaseLocks(stamp: number): Promise<void>;
  /** Whether the grant is still held (not released, not lost). */
  isHeld(stamp: number): boolean;
  /** Why this process found the grant lost, while it remembers (the reason its signal fired with). */
  lossReason(stamp: number): string | undefined;
  /** Which of `locks` are not available now (for the log line of a skipped call). */
  busyLocks(locks: readonly LockRequest[]): Promise<BusyLock[]>;
  /** The DataSource of a fenced transaction: the module's, or the one registered under `name`. */
  dataSource(name?: string): DataSource;
  /** The runner of `@WithLocks({ transaction: { runner } })` (`LockConfigurationError` when it names none). */
  transactionRunner(target: string, transaction: ResolvedLockTransaction): LockTransactionRunner;
  /** Marks `tx` as the transaction the fences of the call of `stamp` must run in, through `runner`, first thing in it. */
  markInLayer(runner: LockTransactionRunner, tx: unknown, stamp: number): Promise<void>;
  /** Records "business done" for `stamps` (in stamp order) through `runner` inside its transaction `tx`; throws `LockLostError`. */
  fenceInLayer(runner: LockTransactionRunner, tx: unknown, stamps: readonly number[]): Promise<void>;
  /** Records "business done" for `stamps` (in stamp order) inside the transaction of `manager`; throws `LockLostError`. */
  fence(stamps: readonly number[], manager: EntityManager): Promise<void>;
  /** A fenced commit relying on `stamps` begins: their lease expiry waits for its outcome (`LockLeases.awaitCommit`). */
  awaitCommit(stamps: readonly number[]): void;
  /** That fenced commit ended (`LockLeases.commitEnded`). */
  commitEnded(stamps: readonly number[], outcome: CommitOutcome): void;
  /** Makes `holder` one that shutdown tells and waits for, until `ended` settles (`LockedCallsTracker.hold`). */
  hold(holder: ShutdownHolder, ended: Promise<unknown>): void;
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
 * What one locked call (or one subscription) holds: the grants of its chain it reuses, and the grant it took for the
 * rest of its group, if any. `close` leaves them; its own grant is released once the nested calls reusing it have
 * settled too. @internal
 */
export class LockScope {
  private closing?: Promise<void>;

  constructor(
    private readonly holder: LockHolder,
    /** The chain to run the call in: the caller's, plus the grant this call took. */
    readonly chain: readonly ChainGrant[],
    private readonly reused: ReadonlySet<ChainGrant>,
    private readonly own: ChainGrant | undefined,
  ) {}

  /** The stamps this scope relies on: the grants it reuses and its own. */
  get stamps(): number[] {
    const stamps = [...this.reused].map((grant) => grant.stamp);
    return this.own ? [...stamps, this.own.stamp] : stamps;
  }

  /** The stamp of the grant this scope took for itself (and releases on `close`); undefined when it only reuses. */
  get ownStamp(): number | undefined {
    return this.own?.stamp;
  }

  /** Runs `fn` in this scope's chain. */
  run<R>(fn: () => R): R {
    return LockContext.run(this.holder, this.chain, fn);
  }

  /** Leaves the reused grants, and releases the own one when its last user has settled (once; awaited). */
  close(): Promise<void> {
    this.closing ??= (async () => {
      for (const grant of this.reused) grant.leave();
      if (!this.own) return;
      this.own.leave();
      await this.own.drained;
      const lost = !this.holder.isHeld(this.own.stamp);
      await this.holder.releaseLocks(this.own.stamp).catch((error: unknown) => {
        // A grant already known lost was logged once, with why: the release that finds it gone is not logged again
        // (the caller still gets the error).
        if (lost && error instanceof IllegalMonitorStateError) reportedLosses.add(error);
        throw error;
      });
    })();
    return this.closing;
  }
}

/**
 * Takes what `locked`'s group needs beyond the open, still-held grants of the calling chain (read synchronously, when
 * called) and enters the grants it reuses. Resolves with the scope, or undefined when the group was not available and
 * `onUnavailable` is `'skip'` (one log line names the busy locks).
 * @throws LockUpgradeError for a name the chain holds for read and `locked` asks for write.
 * @throws LockNotAcquiredError when the group is not available and `onUnavailable` is `'throw'`.
 * @internal
 */
export async function openScope(
  holder: LockHolder,
  locked: LockedCall<unknown>,
  signal?: AbortSignal,
): Promise<LockScope | undefined> {
  const chain = LockContext.chain(holder);
  const covering = new Map<string, ChainGrant>();
  for (const grant of chain) {
    if (!grant.open || !holder.isHeld(grant.stamp)) continue;
    for (const name of grant.locks.keys()) covering.set(name, grant);
  }
  const reused = new Set<ChainGrant>();
  const needed: LockRequest[] = [];
  for (const request of locked.lock.requests) {
    const grant = covering.get(request.name);
    const mode = grant?.locks.get(request.name);
    if (mode === 'read' && request.mode === 'write') throw new LockUpgradeError(request.name, locked.target);
    if (grant) reused.add(grant);
    else needed.push(request);
  }
  // Entered before the first await: the grants cannot close between this check and their use.
  for (const grant of reused) grant.enter();
  if (needed.length === 0) return new LockScope(holder, chain, reused, undefined);

  let stamp: number;
  try {
    stamp = await holder.tryLocks(needed, { waitMs: locked.lock.waitMs ?? 0, signal });
  } catch (error) {
    for (const grant of reused) grant.leave();
    throw error;
  }
  if (stamp === 0) {
    for (const grant of reused) grant.leave();
    if (locked.onUnavailable === 'throw') {
      throw new LockNotAcquiredError(needed, locked.target, locked.lock.retryAfterSeconds);
    }
    logger.log(`Skipped ${locked.target}: ${await describeBusy(holder, needed)}`);
    return undefined;
  }
  const own = new ChainGrant(stamp, new Map<string, LockMode>(needed.map((r) => [r.name, r.mode])));
  return new LockScope(holder, [...chain, own], reused, own);
}

/**
 * "ORDERS_READ refused: ORDERS is held for write elsewhere; LEDGER_READ yields to a waiting writer" for the busy locks
 * of a refused group: what was asked, and what holds it.
 */
async function describeBusy(holder: LockHolder, needed: readonly LockRequest[]): Promise<string> {
  const label = ({ name, mode }: LockRequest) => `${name}_${mode.toUpperCase()}`;
  const busy = await holder.busyLocks(needed).catch(() => undefined);
  if (!busy || busy.length === 0) return `${needed.map(label).join(', ')} not available (busy a moment ago)`;
  return busy.map(describeOne).join('; ');
}

function describeOne({ request, reason, heldFor }: BusyLock): string {
  const asked = `${request.name}_${request.mode.toUpperCase()}`;
  if (reason === 'writer-waiting') return `${asked} yields to a waiting writer of ${request.name}`;
  if (heldFor === undefined) return `${asked} refused: ${request.name} is held elsewhere`;
  const permits = heldFor === request.mode ? ` (its ${heldFor} permits are all in use)` : '';
  return `${asked} refused: ${request.name} is held for ${heldFor} elsewhere${permits}`;
}

/** Release errors of grants whose loss was logged already (when it was found): one event, one line. */
const reportedLosses = new WeakSet<object>();

/** Logs a release that failed after the call settled, unless it only found a loss that was logged already. @internal */
export function logReleaseFailure(target: string, error: unknown): void {
  if (error instanceof Object && reportedLosses.has(error)) return;
  logger.error(`${target}: releasing its locks failed: ${(error as Error)?.message ?? String(error)}`);
}
