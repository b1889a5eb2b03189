import { LockTablesMissingError } from '../../errors/index.js';
import type { LockRequest } from '../../interfaces/index.js';
import type { ResolvedLockOptions } from '../../utils/resolve-lock-options.util.js';
import { MODE_CODE } from '../lock-sql.constants.js';
import { KeyedRequestBatchers } from '../request-batcher.util.js';
import { isMissingMysqlProcedure } from './mysql-error.util.js';
import * as SQL from './mysql-lock.queries.sql.js';
import type { MysqlStatementRunner } from './mysql-statement.runner.js';

/** How long a procedure found missing goes unused before it is tried again. @internal */
export const PROCEDURES_RECHECK_MS = 30_000;

/** Batches of one process in flight at once, and groups per batch. */
const MAX_BATCHES_IN_FLIGHT = 2;
const MAX_BATCH_SIZE = 32;

/**
 * The procedures of the hot path, by version: `group` (`locking_try_acquire` and `locking_release`, first version),
 * `twin` and `batch` (`locking_try_acquire_one`, `locking_try_acquire_batch`, second version), `quiet`
 * (`locking_release_quiet`, migration `MysqlQuietRelease1797000000000`).
 * @internal
 */
export type MysqlProcedure = 'group' | 'twin' | 'batch' | 'quiet';

/** One caller's group in an acquisition batch. */
interface AcquireRequest {
  readonly group: readonly LockRequest[];
  readonly waiter?: string;
}

/**
 * The grants of `MysqlLockStore`: one CALL each, or one CALL for several.
 * - Concurrent calls of this process are coalesced (`RequestBatcher`): under load, one call of
 *   `locking_try_acquire_batch` decides many callers' groups in one transaction and one commit. Calls are batched by
 *   the lease they start with (a leader's grant starts with `leaseMs`, the others with `grantLeaseMs`).
 * - A batch of one calls `locking_try_acquire_one` for a group of one lock (no JSON), `locking_try_acquire` otherwise.
 * - Where a procedure does not exist (a database not migrated to its version) the previous means serve, down to the
 *   statements one by one (`statements`), and the procedure is tried again after `PROCEDURES_RECHECK_MS`.
 * @internal
 */
export class MysqlAcquisitions {
  /** Until when each procedure goes unused, found missing (monotonic ms). */
  readonly missingUntil: Record<MysqlProcedure, number> = { group: 0, twin: 0, batch: 0, quiet: 0 };
  private readonly batcher = new KeyedRequestBatchers<number, AcquireRequest, number>(
    (leaseMs, requests) => this.acquireBatch(leaseMs, requests),
    MAX_BATCHES_IN_FLIGHT,
    MAX_BATCH_SIZE,
  );

  /**
   * True on a node of a Galera cluster (learnt when the app id is claimed): grants go statement by statement, never
   * by the procedures, and each caller's alone (see `tryAcquire`). The cluster aborts a transaction that conflicts with a writeset applied from another node at
   * any moment, the procedure's result set being sent included: the client then reads a broken packet (mysql2:
   * "Should not reach here"), a failure whose outcome is unknown, where the statements end with a plain 1213 that is
   * run again. Measured on MariaDB 10.11 with 8 callers on one name on two nodes: the statements also granted about
   * three times as often as the procedure.
   */
  galera = false;

  constructor(
    private readonly runner: MysqlStatementRunner,
    private readonly options: ResolvedLockOptions,
    private readonly statements: (group: readonly LockRequest[], waiter: string | undefined, leaseMs: number) => Promise<number>,
  ) {}

  /** The group's stamp, or 0 when some lock is not available; its lease starts with `leaseMs`. */
  tryAcquire(group: readonly LockRequest[], waiter: string | undefined, leaseMs: number): Promise<number> {
    // On a Galera node each caller's grant is its own transaction, answered alone: in a batch, one grant rolled back
    // at each of its tries would fail the whole batch, and the grants of the others, committed, would reach nobody.
    if (this.galera) return this.statements(group, waiter, leaseMs);
    return this.batcher.submit(leaseMs, { group, waiter });
  }

  /**
   * Runs `call` on procedure `procedure` (the first version's too: the later ones come with it); undefined when it
   * does not exist (the call failed before anything ran), and then without trying it again for a while.
   */
  async withProcedure<T>(procedure: MysqlProcedure, call: () => Promise<T>): Promise<T | undefined> {
    const now = performance.now();
    if (now < this.missingUntil.group || now < this.missingUntil[procedure]) return undefined;
    try {
      return await call();
    } catch (error) {
      if (!(error instanceof LockTablesMissingError) || !isMissingMysqlProcedure(error)) throw error;
      this.missingUntil[procedure] = performance.now() + PROCEDURES_RECHECK_MS;
      return undefined;
    }
  }

  private async acquireBatch(leaseMs: number, requests: readonly AcquireRequest[]): Promise<number[]> {
    if (requests.length > 1) {
      const { appId, instance, defaultPermits } = this.options;
      const groups = requests.map(({ group, waiter }) => [
        group.map((r) => r.name),
        group.map((r) => MODE_CODE[r.mode]),
        waiter ?? '',
      ]);
      const called = await this.withProcedure('batch', () =>
        this.runner.call<{ stamps: unknown }>('tryLocks', true, SQL.CALL_TRY_ACQUIRE_BATCH, [
          appId,
          instance,
          JSON.stringify(groups),
          leaseMs,
          defaultPermits.write,
          defaultPermits.read,
        ]),
      );
      if (called !== undefined) {
        const stamps = called[0]?.stamps;
        return (JSON.parse(typeof stamps === 'string' ? stamps : String(stamps)) as unknown[]).map(Number);
      }
    }
    return Promise.all(requests.map(({ group, waiter }) => this.acquireOne(group, waiter, leaseMs)));
  }

  /** One caller's group, on its own: the twin, the group procedure, or the statements. */
  private async acquireOne(group: readonly LockRequest[], waiter: string | undefined, leaseMs: number): Promise<number> {
    const { appId, instance, defaultPermits } = this.options;
    const tail = [leaseMs, waiter ?? null, defaultPermits.write, defaultPermits.read];
    const [only] = group;
    if (group.length === 1 && only) {
      const called = await this.withProcedure('twin', () =>
        this.runner.call<{ stamp: number | string }>('tryLocks', true, SQL.CALL_TRY_ACQUIRE_ONE, [
          appId,
          instance,
          only.name,
          MODE_CODE[only.mode],
          ...tail,
        ]),
      );
      if (called !== undefined) return Number(called[0]?.stamp ?? 0);
    }
    // The group comes in its canonical order, sorted by name: the order in which every grant locks its names' rows.
    const called = await this.withProcedure('group', () =>
      this.runner.call<{ stamp: number | string }>('tryLocks', true, SQL.CALL_TRY_ACQUIRE, [
        appId,
        instance,
        JSON.stringify(group.map((r) => r.name)),
        JSON.stringify(group.map((r) => MODE_CODE[r.mode])),
        ...tail,
      ]),
    );
    if (called !== undefined) return Number(called[0]?.stamp ?? 0);
    return this.statements(group, waiter, leaseMs);
  }
}
