import { LockPermitsCache } from '../../lib/services/lock-permits-cache.service.js';
import type { LockStore, PermitsRow } from '../../lib/store/lock.store.js';
import { resolveLockOptions } from '../../lib/utils/resolve-lock-options.util.js';

/** A permits table the test edits; the cache only ever calls `loadPermits`. */
class TablePermitsStore implements Pick<LockStore, 'loadPermits'> {
  rows: PermitsRow[] = [];
  loads = 0;
  async loadPermits(): Promise<PermitsRow[]> {
    this.loads++;
    await new Promise((resolve) => setTimeout(resolve, 1));
    return this.rows.map((row) => ({ ...row }));
  }
}

describe('LockPermitsCache', () => {
  const options = resolveLockOptions({ appId: 'unit', defaultPermits: { read: 2 } });

  it('answers defaults, then the loaded rows, and swaps only when the content changed', async () => {
    const store = new TablePermitsStore();
    const cache = new LockPermitsCache(store, options);
    expect(cache.get('A')).toEqual({ read: 2, write: 1 });

    store.rows = [{ name: 'A', mode: 'read', permits: 5 }];
    expect(await cache.refresh()).toBe(true);
    expect(cache.get('A')).toEqual({ read: 5, write: 1 });
    expect(await cache.refresh()).toBe(false);

    store.rows = [
      { name: 'A', mode: 'read', permits: 5 },
      { name: 'A', mode: 'write', permits: 3 },
    ];
    expect(await cache.refresh()).toBe(true);
    expect(cache.get('A')).toEqual({ read: 5, write: 3 });

    store.rows = [];
    expect(await cache.refresh()).toBe(true);
    expect(cache.get('A')).toEqual({ read: 2, write: 1 });
  });

  it('never shows a half-built cache: readers during a refresh see the old version whole', async () => {
    const store = new TablePermitsStore();
    const cache = new LockPermitsCache(store, options);
    store.rows = [
      { name: 'A', mode: 'read', permits: 4 },
      { name: 'B', mode: 'read', permits: 4 },
    ];
    await cache.refresh();
    store.rows = [
      { name: 'A', mode: 'read', permits: 9 },
      { name: 'B', mode: 'read', permits: 9 },
    ];
    const pending = cache.refresh();
    expect([cache.get('A').read, cache.get('B').read]).toEqual([4, 4]);
    await pending;
    expect([cache.get('A').read, cache.get('B').read]).toEqual([9, 9]);
  });

  it('runs refreshes one after another, so a refresh asked for after a write reads it', async () => {
    const store = new TablePermitsStore();
    const cache = new LockPermitsCache(store, options);
    const first = cache.refresh();
    store.rows = [{ name: 'C', mode: 'write', permits: 2 }];
    const second = cache.refresh();
    await Promise.all([first, second]);
    expect(store.loads).toBe(2);
    expect(cache.get('C').write).toBe(2);
  });
});
