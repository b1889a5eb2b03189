import type { LockLeases } from '../services/lock-leases.service.js';
import type { MemoryLockStore } from '../store/memory/memory-lock.store.js';
import type { ResolvedLockOptions } from '../utils/resolve-lock-options.util.js';
import type { LockFenceStatement } from './lock-fence.interface.js';
import { LockFence } from './lock-fence.service.js';

/**
 * `LockFence` of `LockTestingModule`: the fence checks the grant in the in-memory tables instead of sending a
 * statement. A grant held by this process and live there (not released, reaped, forced, nor past its lease) is marked
 * business done; any other is refused with `LockLostError`, its signal told, as on a database. Nothing is sent
 * through the application's connection or `execute` but what the real fence sends around it: `fenceAndCommit` sends
 * COMMIT (or ROLLBACK when the grant is lost). It is also the fence of `@WithLocks({ transaction: { runner } })`: the
 * check is the runner's transaction's last step, the runner's `execute` is never called. The check is not part of the
 * application's transaction: a grant forced free between the fence and the commit is not caught (see docs/testing.md).
 * @internal
 */
export class MemoryLockFence extends LockFence {
  constructor(
    leases: LockLeases,
    options: ResolvedLockOptions,
    private readonly store: MemoryLockStore,
  ) {
    // `statement()` gives PostgreSQL's text: the in-memory tables have none of their own.
    super({ options: { type: 'postgres' } }, leases, options);
  }

  /** Nothing to mark: the in-memory fence is not sent through the application's transaction. */
  override async markTransaction(): Promise<void> {}

  /** Marks business done in memory; a grant gone there is lost. */
  protected override async send(statement: LockFenceStatement): Promise<void> {
    const [stamp] = statement.params;
    if (!(await this.store.markBusinessDone(stamp))) throw this.lost(stamp);
  }
}
