import type { Abstract, Type } from '@nestjs/common';
import type { LockFenceStatement } from '../fence/lock-fence.interface.js';
import type { LockTransactionIsolation } from './with-locks-options.interface.js';

/**
 * What `@WithLocks({ transaction: { runner } })` asks of the runner when it opens a transaction.
 * @publicApi
 */
export interface LockTransactionRunOptions {
  /** The isolation level of `WithLocksTransactionOptions.isolation`, when the method names one. */
  readonly isolation?: LockTransactionIsolation;
}

/**
 * A transaction of the application's own data layer (Prisma, Drizzle, Kysely, Knex, MikroORM, `pg`, `mysql2`, …), for
 * `@WithLocks({ transaction: { runner } })`: the method runs inside `run`'s transaction, reaches it through
 * `LockService.currentTransaction(runner)`, and the fence of its grants is sent through `execute` as the transaction's
 * last statement. Register the runner as a provider of the application (it is looked up by its token, like any
 * provider) and name it in the decorator, `@WithLocks({ locks, transaction: { runner: PrismaLockTransactions } })`:
 * ```ts
 * @Injectable()
 * export class PrismaLockTransactions implements LockTransactionRunner<Prisma.TransactionClient> {
 *   constructor(private readonly prisma: PrismaService) {}
 *   run<T>(work: (tx: Prisma.TransactionClient) => Promise<T>): Promise<T> {
 *     return this.prisma.$transaction(work);
 *   }
 *   execute(tx: Prisma.TransactionClient, statement: LockFenceStatement): Promise<unknown> {
 *     return tx.$executeRawUnsafe(statement.sql, ...statement.params);
 *   }
 * }
 * ```
 * docs/data-layers.md gives the runner of each layer.
 * @typeParam Tx the layer's transaction object (Prisma's `TransactionClient`, Kysely's `Transaction<DB>`, Knex's
 *   `Knex.Transaction`, a `pg` `PoolClient`, …).
 * @publicApi
 */
export interface LockTransactionRunner<Tx = unknown> {
  /**
   * Opens a transaction, runs `work` with it, and commits when `work` resolves (rolls back when it rejects), resolving
   * once the COMMIT has succeeded: the grants are released only after that. `work` sends the fence last: do not send
   * anything after it.
   */
  run<T>(work: (tx: Tx) => Promise<T>, options: LockTransactionRunOptions): Promise<T>;
  /**
   * Sends `statement` (the fence of one grant) inside `tx` and returns what the layer returns for it, unchanged: a
   * count (Prisma's `$executeRawUnsafe`), the rows, or the driver's result (`pg`, `mysql2`, Kysely, Knex's `raw`,
   * Drizzle's `execute`).
   */
  execute(tx: Tx, statement: LockFenceStatement): Promise<unknown>;
}

/**
 * How `@WithLocks({ transaction: { runner } })` names its runner: the injection token of a provider of the application
 * (usually the runner's class), or the runner itself.
 * @publicApi
 */
export type LockTransactionRunnerToken<Tx = unknown> =
  | Type<LockTransactionRunner<Tx>>
  | Abstract<LockTransactionRunner<Tx>>
  | LockTransactionRunner<Tx>
  | string
  | symbol;
