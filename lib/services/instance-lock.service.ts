import { Inject, Injectable, Logger, type OnModuleDestroy } from '@nestjs/common';
import { AppIdInUseError } from '../errors/index.js';
import { RESOLVED_LOCK_OPTIONS } from '../lock.constants.js';
import { LockStore, type InstanceSession } from '../store/lock.store.js';
import type { ResolvedLockOptions } from '../utils/resolve-lock-options.util.js';
import { LockLeases } from './lock-leases.service.js';

/**
 * One live instance per `appId`. The instance holds a session advisory lock on its app id over a connection of its
 * own for as long as it lives: a second live instance with the same id cannot take it and refuses to start (start-up
 * recovery would otherwise free the first one's locks), while a crashed instance's lock vanishes with its
 * connection, so a restart recovers at once. If the connection breaks, the lock is taken again; if a twin got it in
 * between, this instance is fenced: every grant it holds is reported lost.
 * @internal
 */
@Injectable()
export class InstanceLock implements OnModuleDestroy {
  private readonly logger = new Logger('LockModule');
  private session?: InstanceSession;

  constructor(
    @Inject(LockStore) private readonly store: LockStore,
    private readonly leases: LockLeases,
    @Inject(RESOLVED_LOCK_OPTIONS) private readonly options: ResolvedLockOptions,
  ) {}

  /** Takes the app id at start-up. @throws AppIdInUseError */
  async claim(): Promise<void> {
    this.session = await this.store.claimAppId();
    if (!this.session) throw new AppIdInUseError(this.options.appId, await this.store.describeAppIdHolder());
  }

  /** Called by the renewal task: takes the app id again if the connection that held it broke. */
  async ensure(): Promise<void> {
    if (!this.session || this.session.alive) return;
    // Hand the broken connection back to the pool (which destroys it): kept, it would hold a pool slot for good,
    // and the DataSource could never close.
    this.session.close();
    this.session = await this.store.claimAppId();
    if (this.session) {
      this.logger.warn(`Instance lock of app "${this.options.appId}" re-taken after its connection broke`);
      return;
    }
    this.leases.loseAll(`another instance took app id "${this.options.appId}" while this one was disconnected`);
    throw new AppIdInUseError(this.options.appId, await this.store.describeAppIdHolder());
  }

  onModuleDestroy(): void {
    this.session?.close();
    this.session = undefined;
  }
}
