import { InvalidLockArgumentError, InvalidLockSpecError, type LockMode } from 'nestjs-db-locks';
import { createLockApp, type LockApp } from '../support/lock-app.js';
import { tableSnapshot } from '../support/lock-rows.js';
import { DIALECTS } from '../support/dialects.js';
import type { TestDatabase } from '../support/test-database.js';

const BAD_GROUPS: unknown[] = [
  [],
  ['WS2_WRTE'],
  ['WS1'],
  ['ws\n1_READ'],
  [''],
  [null],
  [{ name: 'A', mode: 'exclusive' }],
  [`${'n'.repeat(201)}_WRITE`],
  ['A_READ', 'A_WRITE'],
  'A_WRITE',
  null,
  undefined,
  42,
];
const BAD_STAMPS: unknown[] = [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 53, '5', null, undefined, 10n];
const BAD_PERMITS: Array<[unknown, unknown, unknown]> = [
  ['A', 'write', 0],
  ['A', 'write', -3],
  ['A', 'read', 1.5],
  ['A', 'read', 2 ** 31],
  ['A', 'read', '3'],
  ['A', 'append', 1],
  ['bad\tname', 'read', 1],
  ['', 'write', 1],
];

for (const dialect of DIALECTS) dialect.describe(`bad input: a typed error and no change on ${dialect.name}`, () => {
  let db: TestDatabase;
  let app: LockApp;
  let before: unknown;

  beforeAll(async () => {
    db = await dialect.createDatabase();
    app = await createLockApp(db.url, { appId: 'validator' });
    await app.locks.setLockPermits('A', 'read', 2);
    await app.locks.tryLocks(['A_READ']);
    before = await tableSnapshot(db);
  });
  afterAll(async () => {
    await app.close();
    await db.drop();
  });
  afterEach(async () => {
    expect(await tableSnapshot(db)).toEqual(before);
  });

  it.each(BAD_GROUPS.map((g) => [g]))('tryLocks(%j) → InvalidLockSpecError', async (group) => {
    await expect(app.locks.tryLocks(group as never)).rejects.toThrow(InvalidLockSpecError);
  });

  it.each(BAD_STAMPS.map((s) => [s]))('releaseLocks(%p) → InvalidLockArgumentError', async (stamp) => {
    await expect(app.locks.releaseLocks(stamp as never)).rejects.toThrow(InvalidLockArgumentError);
  });

  it.each(BAD_PERMITS)('setLockPermits(%j, %j, %j) → typed error', async (name, mode, permits) => {
    const error = await app.locks
      .setLockPermits(name as string, mode as LockMode, permits as number)
      .catch((e: unknown) => e);
    expect(error instanceof InvalidLockSpecError || error instanceof InvalidLockArgumentError).toBe(true);
  });

  it('getLockPermits refuses a bad name', () => {
    expect(() => app.locks.getLockPermits('no newline\n')).toThrow(InvalidLockSpecError);
  });

  it('validates before touching the database: the errors are the same with the database gone', async () => {
    const offline = await createLockApp(db.url, { appId: 'offline' });
    await offline.close(); // destroys its DataSource: any database access would now fail differently
    await expect(offline.locks.tryLocks(['WS2_WRTE'] as never)).rejects.toThrow(InvalidLockSpecError);
    await expect(offline.locks.releaseLocks(1.5)).rejects.toThrow(InvalidLockArgumentError);
    await expect(offline.locks.setLockPermits('A', 'read', 0)).rejects.toThrow(InvalidLockArgumentError);
  });
});
