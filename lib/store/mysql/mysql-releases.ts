import type { LockRequest } from '../../interfaces/index.js';
import type { ResolvedLockOptions } from '../../utils/resolve-lock-options.util.js';
import { jsonArray } from '../lock-rows.util.js';
import type { MysqlAcquisitions } from './mysql-acquisitions.js';
import { doorbellIds, type MysqlDoorbellRinger } from './mysql-doorbell.ringer.js';
import type { MysqlHandedRow } from './mysql-hand-overs.js';
import * as SQL from './mysql-lock.queries.sql.js';
import type { MysqlWakeups } from './mysql-sessions.util.js';
import type { MysqlStatementRunner } from './mysql-statement.runner.js';

/** The names a release freed, from the procedure's `lock_names` (null: nothing matched). */
const freedNames = (value: unknown): string[] | undefined => (value === null || value === undefined ? undefined : jsonArray(value));

/** Grants whose names `MysqlReleases` remembers at most (those past it are released with `locking_release`). */
const MAX_KNOWN_GRANTS = 10_000;

/**
 * The releases of `MysqlLockStore`, one CALL each: `locking_release_quiet` for a grant whose names this process knows
 * (it answers with its OK packet alone when it has no doorbell to name), `locking_release` otherwise (it answers the
 * names), or the statements one by one on a database before the procedures. Each wakes this process's waiters of the
 * freed names and rings the doorbells of other instances' waiters.
 * @internal
 */
export class MysqlReleases {
  /**
   * The names of this process's live grants, by stamp: what a release frees for this process's own waiters, known
   * without asking the database. A grant missing here (past `MAX_KNOWN_GRANTS`, or a stamp this store did not grant)
   * is released by `locking_release`, which answers its names.
   */
  private readonly grantNames = new Map<number, readonly string[]>();

  constructor(
    private readonly runner: MysqlStatementRunner,
    private readonly options: ResolvedLockOptions,
    private readonly procedures: MysqlAcquisitions,
    private readonly wakeups: MysqlWakeups,
    private readonly ringer: MysqlDoorbellRinger,
  ) {}

  /** Remembers the names of a grant of this process (`stamp` 0: nothing was granted). */
  granted(stamp: number, group: readonly LockRequest[]): void {
    if (stamp > 0 && this.grantNames.size < MAX_KNOWN_GRANTS) this.grantNames.set(stamp, group.map((r) => r.name));
  }

  /** Forgets grants that ended otherwise (reaped, forced, recovered): they are never released. */
  forget(stamps: Iterable<number>): void {
    for (const stamp of stamps) this.grantNames.delete(stamp);
  }

  /** Forgets every grant of this process (its start-up recovery ended them all). */
  forgetAll(): void {
    this.grantNames.clear();
  }

  /**
   * On a node of a Galera cluster: statement by statement, never by the procedures (see `MysqlAcquisitions.galera`).
   * @internal
   */
  galera = false;

  /** Whether `stamp` matched a live grant of this app (now released). */
  async release(stamp: number): Promise<boolean> {
    if (this.galera) return this.releaseOnCluster(stamp);
    const known = this.grantNames.get(stamp);
    if (known !== undefined) {
      const released = await this.releaseQuietly(stamp, known);
      if (released !== undefined) return released;
    }
    const called = await this.procedures.withProcedure('group', () =>
      this.runner.call<{ lock_names: unknown; doorbells?: unknown } & MysqlHandedRow>('releaseLocks', false, SQL.CALL_RELEASE, [
        stamp,
        this.options.appId,
      ]),
    );
    const names = called === undefined ? await this.releaseStatements(stamp) : freedNames(called[0]?.lock_names);
    this.grantNames.delete(stamp);
    if (names === undefined) return false;
    if (!this.handedOver(called?.[0], names)) this.wakeups.freed(names);
    // The procedure's second version names the doorbells of other instances' waiters on these names (the first
    // version and the statements one by one, of a database before the doorbells' migration, name none: they poll).
    this.ringer.ring(doorbellIds(called?.[0]?.doorbells));
    return true;
  }

  /**
   * Reports a grant the release of `names` handed to a waiter of this app to this process's listener, and remembers
   * its names (the name it freed: a hand-over is of one name), so that its release is a quiet one too; a waiter of
   * another app id is woken by its doorbell, which the release named. Whether it was a write handed over: the release
   * then woke nobody else (the other waiters have nothing to try until its holder releases).
   */
  private handedOver(row: MysqlHandedRow | undefined, names: readonly string[]): boolean {
    const stamp = Number(row?.handed ?? 0);
    if (!(stamp > 0) || typeof row?.handed_waiter !== 'string') return false;
    if (row.handed_app === this.options.appId) {
      if (this.grantNames.size < MAX_KNOWN_GRANTS) this.grantNames.set(stamp, names);
      this.wakeups.handedOver(row.handed_waiter, stamp, Number(row.rows_end ?? 0));
    }
    return row.handed_mode === 'W';
  }

  /**
   * The release of a grant of this process whose names it knows, by `locking_release_quiet`: whether it released;
   * undefined when the database has no such procedure (a database before its migration).
   */
  private async releaseQuietly(stamp: number, names: readonly string[]): Promise<boolean | undefined> {
    const answer = await this.procedures.withProcedure('quiet', () =>
      this.runner.callAnswer<{ released: number | string; doorbells: unknown } & MysqlHandedRow>('releaseLocks', false, SQL.CALL_RELEASE_QUIET, [
        stamp,
        this.options.appId,
      ]),
    );
    if (answer === undefined) return undefined;
    this.grantNames.delete(stamp);
    // No result set: nothing but the release to tell (MariaDB), and the OK packet's affected rows say whether it did.
    const [row] = answer.rows ?? [];
    if (!(row === undefined ? answer.affectedRows > 0 : Number(row.released) === 1)) return false;
    if (!this.handedOver(row, names)) this.wakeups.freed(names);
    this.ringer.ring(doorbellIds(row?.doorbells));
    return true;
  }

  /** The release sent statement by statement; the names it freed, or undefined when nothing matched. */
  private async releaseStatements(stamp: number): Promise<string[] | undefined> {
    return (await this.releaseWith(stamp, false))?.names;
  }

  /** The release on a Galera node: the statements, which also read the doorbells to ring (as the procedures do). */
  private async releaseOnCluster(stamp: number): Promise<boolean> {
    const released = await this.releaseWith(stamp, true);
    this.grantNames.delete(stamp);
    if (released === undefined) return false;
    this.wakeups.freed(released.names);
    this.ringer.ring(doorbellIds(released.doorbells));
    return true;
  }

  /** The release's statements in one transaction: the names it freed (and the doorbells, when `ringing`). */
  private releaseWith(stamp: number, ringing: boolean): Promise<{ names: string[]; doorbells: unknown } | undefined> {
    const { appId } = this.options;
    return this.runner.transaction('releaseLocks', false, async (tx) => {
      const ended = await tx.write(SQL.END_GRANT_RELEASED, [stamp, appId]);
      if (ended.affectedRows === 0) return undefined;
      const rows = await tx.select<{ lock_name: string }>(SQL.SELECT_GRANT_NAMES, [stamp]);
      const [bells] = ringing ? await tx.select<{ doorbells: unknown }>(SQL.SELECT_GRANT_DOORBELLS, [stamp, appId]) : [];
      await tx.write(SQL.DELETE_GRANT_LOCKS, [stamp]);
      return { names: rows.map((row) => row.lock_name), doorbells: bells?.doorbells };
    });
  }
}
