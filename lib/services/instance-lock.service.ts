import { Inject, Injectable, Logger } from '@nestjs/common';
import { AppIdInUseError, LockServerReadOnlyError, LockTablesMissingError } from '../errors/index.js';
import { RESOLVED_LOCK_OPTIONS } from '../lock.constants.js';
import { LockStore, type InstanceSession } from '../store/lock.store.js';
import { isProcessGone, processKey } from '../utils/process-identity.util.js';
import type { ResolvedLockOptions } from '../utils/resolve-lock-options.util.js';
import { LockLeases } from './lock-leases.service.js';

/** Claims of the app id before a holder that is not this process's own old session counts as a twin. */
const CLAIM_ATTEMPTS = 3;

/**
 * For how long a session this process closed counts as its own when it still holds the app id (ms): the server frees
 * the lock of a destroyed connection once it notices the connection is gone, a moment later (longer on a loaded
 * server, or when the network delays the end of the connection).
 */
const CLOSED_SESSION_MS = 10_000;

/**
 * One live instance per `appId`. The instance holds a session advisory lock on its app id over a connection of its
 * own for as long as it lives: a second live instance with the same id cannot take it and refuses to start (start-up
 * recovery would otherwise free the first one's locks), while a crashed instance's lock vanishes with its
 * connection, so a restart recovers at once.
 *
 * If the connection breaks (a database restart, a terminated backend, a reset), the instance grants nothing until it
 * holds its app id again: the renewal task and the next `tryLocks` take it back as soon as the database answers. If a
 * twin took it in between, this instance is fenced for good: every grant it held is reported lost (the twin's
 * start-up recovery freed them) and every later acquisition throws `AppIdInUseError`.
 * @internal
 */
@Injectable()
export class InstanceLock {
  private readonly logger = new Logger('LockModule');
  private session?: InstanceSession;
  private fenced?: AppIdInUseError;
  private reclaiming?: Promise<void>;
  private closed = false;
  private readOnlyReason?: string;
  /** The instances of this process that hold an app id or may take it back (claimed, not yet released), by app id. */
  private static readonly live = new Map<string, Set<InstanceLock>>();
  /**
   * The sessions that instances of this process closed after holding an app id (server pid → when), by app id: one
   * that still holds it is this process's own, not a twin. So `app.close()` followed at once by a new application with
   * the same `appId` in the same process (a test suite, a hot reload) ends that session rather than fail to start.
   */
  private static readonly closedHere = new Map<string, Map<number, number>>();

  constructor(
    @Inject(LockStore) private readonly store: LockStore,
    private readonly leases: LockLeases,
    @Inject(RESOLVED_LOCK_OPTIONS) private readonly options: ResolvedLockOptions,
  ) {}

  /** True while this instance holds its app id: it may grant. */
  get held(): boolean {
    return this.session?.alive === true;
  }

  /** The reason this instance refuses to grant for good, once a twin took its app id. */
  get fencedBy(): AppIdInUseError | undefined {
    return this.fenced;
  }

  /**
   * Why the app id is not held while the database answers: the server may not write (a standby, a demoted primary
   * that a proxy still routes to); undefined once the app id is taken on a writable server.
   */
  get readOnly(): string | undefined {
    return this.readOnlyReason;
  }

  /**
   * Takes the app id at start-up and records this process as its holder. Called again after a transient failure, it
   * keeps an app id it still holds (or takes it back, ending its own stale session) and records again.
   * @returns whether the previous life of this app id is provably over (it ran on this machine and its process is
   *   gone): only then may start-up recovery free its grants at once. Its session may also have ended while it still
   *   runs (a terminated backend, an idle timeout, a failover, another machine): its grants then end with their
   *   leases, after its own watchdog told it.
   * @throws AppIdInUseError
   */
  async claim(): Promise<boolean> {
    if (!this.held) {
      const previous = this.session?.pid;
      this.closeSession();
      this.session = await this.takeAppId(previous);
      if (!this.session) throw new AppIdInUseError(this.options.appId, await this.store.describeAppIdHolder());
    }
    const previous = await this.record();
    const here = InstanceLock.live.get(this.options.appId) ?? new Set<InstanceLock>();
    InstanceLock.live.set(this.options.appId, here.add(this));
    // A previous life in this very process is over once no other instance here may still hold the app id.
    return isProcessGone(previous) || (previous !== undefined && previous === processKey() && here.size === 1);
  }

  /**
   * Records this process as the app id's holder; the previous holder's key. A database whose migrations have not
   * added `locking_instances` yet (a rolling deploy ahead of them) proves nothing: undefined.
   */
  private async record(): Promise<string | null | undefined> {
    try {
      return await this.store.recordInstance(processKey() ?? null);
    } catch (error) {
      if (!(error instanceof LockTablesMissingError)) throw error;
      this.logger.warn('Table locking_instances is missing (run the lock migrations): start-up recovery waits for leases');
      return undefined;
    }
  }

  /**
   * Makes sure this instance holds its app id on a writable server, taking it back if the connection that held it
   * broke (one attempt at a time, shared by concurrent callers), giving it up if the server became read-only.
   * @throws AppIdInUseError once a twin holds it; LockServerReadOnlyError while the server may not write;
   *   LockStoreError while the database cannot be reached.
   */
  async ensure(): Promise<void> {
    if (this.fenced) throw this.fenced;
    if (this.closed) return;
    // A claim that holds across servers by its lease alone (a Galera cluster) is renewed first: it may find a twin.
    if (this.held) await this.session?.keep?.();
    if (this.held) return this.verifyWritable();
    this.reclaiming ??= this.reclaim().finally(() => (this.reclaiming = undefined));
    return this.reclaiming;
  }

  /**
   * Gives the app id up, at the very end of shutdown, once no grant of this instance is held (`app.close()` keeps it
   * while the locked calls under way run: a same-`appId` process started meanwhile is refused).
   */
  release(): void {
    InstanceLock.live.get(this.options.appId)?.delete(this);
    this.closed = true;
    this.closeSession();
  }

  /** Closes the session that held the app id (if any), remembering it as this process's own. */
  private closeSession(): void {
    const session = this.session;
    this.session = undefined;
    if (!session) return;
    session.close();
    const closed = InstanceLock.closedHere.get(this.options.appId) ?? new Map<number, number>();
    InstanceLock.closedHere.set(this.options.appId, closed.set(session.pid, performance.now()));
  }

  /** Whether `pid`, the holder of the app id, is a session this process closed (lately) or `previous`. */
  private isOwnOldSession(pid: number, previous: number | undefined): boolean {
    if (pid === previous) return true;
    const closedAt = InstanceLock.closedHere.get(this.options.appId)?.get(pid);
    return closedAt !== undefined && performance.now() - closedAt < CLOSED_SESSION_MS;
  }

  /**
   * Takes the app id on a new session; undefined when a twin holds it. The holder may also be the session this
   * process gave up, still on the server: exiting (terminated, it keeps its locks for a moment after it left
   * `pg_stat_activity`) or stalled (the server has not noticed the connection is gone). That one is ended, not
   * mistaken for a twin: a pid cannot be reused while its process still holds a lock.
   */
  private async takeAppId(previous: number | undefined): Promise<InstanceSession | undefined> {
    for (let attempt = 1; ; attempt++) {
      const session = await this.claimWritable();
      if (session) InstanceLock.closedHere.delete(this.options.appId); // the app id was free: they hold nothing
      if (session || attempt >= CLAIM_ATTEMPTS) return session;
      const holder = await this.store.appIdHolderPid();
      if (holder !== undefined && !this.isOwnOldSession(holder, previous)) return undefined;
      if (holder !== undefined) await this.store.endStaleClaim(holder);
    }
  }

  /** `claimAppId`, remembering whether the server refused it for being read-only (the health check says why). */
  private async claimWritable(): Promise<InstanceSession | undefined> {
    try {
      const session = await this.store.claimAppId();
      if (session && this.readOnlyReason !== undefined) {
        this.logger.log(`The database server is writable again: app id "${this.options.appId}" taken`);
      }
      this.readOnlyReason = undefined;
      return session;
    } catch (error) {
      if (error instanceof LockServerReadOnlyError) this.noteReadOnly(error.message);
      throw error;
    }
  }

  /**
   * Gives the app id up when the server the pool reaches may not write (checked on every renewal tick): every grant
   * would fail there, and the health check must say so. It is taken again once the server (or the one a proxy moves
   * to) accepts writes.
   */
  private async verifyWritable(): Promise<void> {
    const reason = await this.store.readOnlyReason().catch(() => undefined);
    if (reason === undefined || !this.held) return;
    this.noteReadOnly(`the server may not write (${reason})`);
    this.closeSession();
  }

  private noteReadOnly(reason: string): void {
    if (this.readOnlyReason === undefined) {
      this.logger.warn(
        `The database server is read-only (${reason}): app id "${this.options.appId}" is not held there and nothing ` +
          'is granted until a writable server answers',
      );
    }
    this.readOnlyReason = reason;
  }

  private async reclaim(): Promise<void> {
    // Hand the broken connection back to the pool, which destroys it: kept, it would hold a pool slot for good.
    const previous = this.session?.pid;
    this.closeSession();
    const session = await this.takeAppId(previous);
    if (this.closed) {
      this.session = session;
      this.closeSession();
      return;
    }
    if (session) {
      this.session = session;
      await this.record().catch(() => undefined); // its own key again: informative only
      this.logger.warn(`Instance lock of app "${this.options.appId}" taken again after its connection broke`);
      return;
    }
    this.fenced = new AppIdInUseError(this.options.appId, await this.store.describeAppIdHolder().catch(() => 'unknown'));
    this.logger.error(`${this.fenced.message} This instance grants nothing more; restart it with an appId of its own.`);
    this.leases.loseAll(`another instance took app id "${this.options.appId}" while this one was disconnected`);
    throw this.fenced;
  }
}
