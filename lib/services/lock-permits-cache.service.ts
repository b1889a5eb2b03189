import { Inject, Injectable } from '@nestjs/common';
import type { LockPermits } from '../interfaces/index.js';
import { RESOLVED_LOCK_OPTIONS } from '../lock.constants.js';
import { LockStore, type PermitsRow } from '../store/lock.store.js';
import type { ResolvedLockOptions } from '../utils/resolve-lock-options.util.js';

type Overrides = ReadonlyMap<string, Partial<LockPermits>>;

/**
 * The in-memory copy of `locking_permissions` (seed 000's permits cache). A refresh builds a complete new map and
 * swaps the reference only when the content changed, so readers always see one whole version, never a half-cleared
 * map. Grants never depend on it: the acquiring statement reads the committed permits itself.
 * @internal
 */
@Injectable()
export class LockPermitsCache {
  private overrides: Overrides = new Map();
  private lastRefresh: Promise<boolean> = Promise.resolve(false);

  constructor(
    @Inject(LockStore) private readonly store: Pick<LockStore, 'loadPermits'>,
    @Inject(RESOLVED_LOCK_OPTIONS) private readonly options: ResolvedLockOptions,
  ) {}

  /** The permits in force for `name` as last loaded. */
  get(name: string): LockPermits {
    const override = this.overrides.get(name);
    return {
      read: override?.read ?? this.options.defaultPermits.read,
      write: override?.write ?? this.options.defaultPermits.write,
    };
  }

  /**
   * Reloads the table; resolves to true when the content changed. Refreshes run one after another, so a refresh
   * asked for after a write always reads that write.
   */
  refresh(): Promise<boolean> {
    const next = this.lastRefresh.catch(() => false).then(() => this.load());
    this.lastRefresh = next;
    return next;
  }

  private async load(): Promise<boolean> {
    const loaded = toOverrides(await this.store.loadPermits());
    if (sameOverrides(this.overrides, loaded)) return false;
    this.overrides = loaded;
    return true;
  }
}

function toOverrides(rows: readonly PermitsRow[]): Overrides {
  const map = new Map<string, { read?: number; write?: number }>();
  for (const row of rows) {
    const entry = map.get(row.name) ?? {};
    entry[row.mode] = row.permits;
    map.set(row.name, entry);
  }
  return map;
}

function sameOverrides(a: Overrides, b: Overrides): boolean {
  if (a.size !== b.size) return false;
  for (const [name, permits] of a) {
    const other = b.get(name);
    if (!other || other.read !== permits.read || other.write !== permits.write) return false;
  }
  return true;
}
