import { DataSource } from 'typeorm';
import { InMemoryLockDatabase, LockAdminService } from 'nestjs-db-locks';
import type { LeaderTermStore } from '../../lib/store/leader-terms.store.js';
import { createLeaderTermStore } from '../../lib/store/lock-stores.factory.js';
import { MemoryLeaderTermStore } from '../../lib/store/memory/memory-leader-terms.store.js';
import { resolveLockOptions } from '../../lib/utils/resolve-lock-options.util.js';
import { DIALECTS } from '../support/dialects.js';
import { createLockApp, trackApps, type LockApp } from '../support/lock-app.js';
import { MEMORY_ENGINE_TARGET } from '../contract/memory-engine.store.js';
import type { EngineStore } from '../contract/lock-engine.contract.js';

/** A store of terms over the same tables as the instances `store` starts. */
interface TermsTarget {
  readonly name: string;
  readonly describe: jest.Describe;
  open(): Promise<{ engine: EngineStore; terms: (app: LockApp) => LeaderTermStore }>;
}

const TARGETS: TermsTarget[] = [
  ...DIALECTS.map((dialect) => ({
    name: dialect.name,
    describe: dialect.describe,
    async open() {
      const db = await dialect.createDatabase();
      return {
        engine: { start: (options: { appId: string }) => createLockApp(db.url, options), drop: () => db.drop() },
        terms: (app: LockApp) => createLeaderTermStore(app.app.get(DataSource), resolveLockOptions({ appId: 'terms' })),
      };
    },
  })),
  {
    name: 'the in-memory store',
    describe,
    async open() {
      const engine = await MEMORY_ENGINE_TARGET.open();
      return { engine, terms: (app: LockApp) => new MemoryLeaderTermStore(app.app.get(InMemoryLockDatabase)) };
    },
  },
];

// The election's conditions in the database (`LeaderTermStore.elect`), which no replica can break from outside:
// only a live grant gets a term, never one older than the role's last winner, and again under one stamp the same term.
for (const target of TARGETS) target.describe(`the terms of leader election on ${target.name}`, () => {
  let opened: Awaited<ReturnType<TermsTarget['open']>>;
  const apps = trackApps((appId: string) => opened.engine.start({ appId }));

  beforeAll(async () => {
    opened = await target.open();
  });
  afterEach(() => apps.closeAll());
  afterAll(() => opened?.engine.drop());

  it('gives a live grant the next term, the same one again, and nothing to an older grant or a released one', async () => {
    const app = await apps.start('one');
    const terms = opened.terms(app);
    const older = await app.locks.tryLocks([{ name: 'elsewhere-a', mode: 'write' }]);
    const newer = await app.locks.tryLocks([{ name: 'elsewhere-b', mode: 'write' }]);
    expect(newer).toBeGreaterThan(older);
    const first = await terms.elect('store-role', newer, 'one', 'test');
    expect(first).toMatchObject({ term: 1 });
    expect(await terms.elect('store-role', newer, 'one', 'test')).toEqual(first); // idempotent per stamp
    expect(await terms.elect('store-role', older, 'one', 'test')).toBeUndefined(); // a stale grant
    expect(await terms.elect('store-role', newer, 'two', 'test')).toBeUndefined(); // not this app's grant
    await app.locks.releaseLocks(newer);
    const newest = await app.locks.tryLocks([{ name: 'elsewhere-c', mode: 'write' }]);
    expect(await terms.elect('store-role', newer, 'one', 'test')).toBeUndefined(); // released
    expect(await terms.elect('store-role', newest, 'one', 'test')).toMatchObject({ term: 2 });
    await app.locks.releaseLocks(older);
    await app.locks.releaseLocks(newest);
  });

  it('refuses a grant while another grant holds the role\'s lock', async () => {
    const app = await apps.start('one');
    const terms = opened.terms(app);
    await app.app.get(LockAdminService).setPermits('leader:two-writers', 'write', 2);
    const first = await app.locks.tryLocks([{ name: 'leader:two-writers', mode: 'write' }]);
    const second = await app.locks.tryLocks([{ name: 'leader:two-writers', mode: 'write' }]);
    expect(second).toBeGreaterThan(first);
    expect(await terms.elect('two-writers', second, 'one', 'test')).toBeUndefined();
    await app.locks.releaseLocks(first);
    expect(await terms.elect('two-writers', second, 'one', 'test')).toMatchObject({ term: 1 });
    await app.locks.releaseLocks(second);
  });
});
