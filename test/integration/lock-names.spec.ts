import { Controller, Param, Post } from '@nestjs/common';
import { InvalidLockSpecError, WithLocks } from 'nestjs-db-locks';
import { createLockApp, type LockApp } from '../support/lock-app.js';
import { lockRows, tableSnapshot } from '../support/lock-rows.js';
import { createNestApp, type TestNestApp } from '../support/nest-app.js';
import { DIALECTS } from '../support/dialects.js';
import type { TestDatabase } from '../support/test-database.js';

/** Names a user might lock on: e-mail addresses, accents, emoji, other scripts, SQL text, quotes. */
const NAMES = [
  'user:ana@example.com',
  'client:José Álvarez',
  'emoji:🔒😀',
  '顧客:山田',
  "x';DROP TABLE locking;--",
  'quote:"\\`',
  ' leading space',
  'nbsp-end\u00a0',
];

/** Pairs that look alike but are different byte sequences: two locks each. */
const LOOKALIKES: Array<[string, string]> = [
  ['café', 'cafe\u0301'], // precomposed é vs e + combining acute
  ['Orders', 'ORDERS'], // case (MySQL's default collations would make them one)
  ['straße', 'strasse'],
  ['Ａ', 'A'], // fullwidth vs ASCII
  ['x', 'x\u00a0'], // a trailing no-break space is not a space to PAD SPACE collations
];

const MAX_NAME = 'é'.repeat(100); // 200 bytes of UTF-8, 100 characters
const MAX_EMOJI_NAME = '😀'.repeat(50); // 200 bytes, 100 UTF-16 code units
const ONE_BYTE_MORE = `${MAX_NAME}x`;

const REFUSED = [ONE_BYTE_MORE, `${MAX_EMOJI_NAME}x`, '', 'line\nbreak', 'tab\there', 'nul\u0000', 'end ', 'half\ud83d'];

@Controller('users')
class UsersController {
  @Post(':key/lock')
  @WithLocks((key: string) => ({ name: `user:${key}`, mode: 'write' }))
  async lock(@Param('key') key: string): Promise<{ key: string; rows: string[] }> {
    return { key, rows: (await lockRows(lockedDb)).map((r) => r.lock_name) };
  }
}

let lockedDb: TestDatabase;

for (const dialect of DIALECTS) dialect.describe(`any string as a lock name on ${dialect.name}`, () => {
  let db: TestDatabase;
  let one: LockApp;
  let two: LockApp;
  let api: TestNestApp;

  beforeAll(async () => {
    db = await dialect.createDatabase();
    lockedDb = db;
    one = await createLockApp(db.url, { appId: 'names-one' });
    two = await createLockApp(db.url, { appId: 'names-two' });
    api = await createNestApp(db.url, { appId: 'names-api' }, { controllers: [UsersController] });
  });
  afterAll(async () => {
    await api.close();
    await one.close();
    await two.close();
    await db.drop();
  });

  it('stores every name byte for byte, in the object and the string form, and excludes a second writer', async () => {
    for (const name of NAMES) {
      const stamp = await one.locks.tryLocks([{ name, mode: 'write' }]);
      expect(stamp).toBeGreaterThan(0);
      const [row] = await db.query<{ lock_name: string }>('SELECT lock_name FROM locking WHERE stamp = $1', [stamp]);
      expect(Buffer.from(row!.lock_name, 'utf8').equals(Buffer.from(name, 'utf8'))).toBe(true);
      // The string form is the same lock: the name, then _WRITE.
      expect(await two.locks.tryLocks([`${name}_WRITE`])).toBe(0);
      expect(await two.locks.tryLocks([{ name, mode: 'read' }])).toBe(0);
      await one.locks.releaseLocks(stamp);
      const again = await two.locks.tryLocks([`${name}_READ`]);
      expect(again).toBeGreaterThan(0);
      await two.locks.releaseLocks(again);
    }
  });

  it.each(LOOKALIKES)('%j and %j are two locks', async (a, b) => {
    const held = await one.locks.tryLocks([{ name: a, mode: 'write' }]);
    expect(held).toBeGreaterThan(0);
    const other = await two.locks.tryLocks([{ name: b, mode: 'write' }]);
    expect(other).toBeGreaterThan(0);
    expect(await two.locks.tryLocks([{ name: a, mode: 'write' }])).toBe(0);
    expect(new Set((await lockRows(db)).map((r) => r.lock_name))).toEqual(new Set([a, b]));
    await one.locks.releaseLocks(held);
    await two.locks.releaseLocks(other);
  });

  it('a group of look-alikes and astral names is taken whole, in one grant', async () => {
    const group = LOOKALIKES.flat().map((name) => ({ name, mode: 'write' as const }));
    const stamp = await one.locks.tryLocks([...group, { name: MAX_EMOJI_NAME, mode: 'read' }]);
    expect(stamp).toBeGreaterThan(0);
    expect((await lockRows(db)).map((r) => r.lock_name).sort()).toEqual([...LOOKALIKES.flat(), MAX_EMOJI_NAME].sort());
    await one.locks.releaseLocks(stamp);
  });

  it('takes a name of exactly 200 bytes, with permits, and refuses one byte more with nothing changed', async () => {
    for (const name of [MAX_NAME, MAX_EMOJI_NAME]) {
      await one.locks.setLockPermits(name, 'read', 3);
      const stamp = await one.locks.tryLocks([{ name, mode: 'read' }]);
      expect((await lockRows(db)).map((r) => r.lock_name)).toEqual([name]);
      await one.locks.releaseLocks(stamp);
      await one.locks.setLockPermits(name, 'read', null);
    }
    const before = await tableSnapshot(db);
    for (const name of REFUSED) {
      const error = await one.locks.tryLocks([{ name, mode: 'write' }]).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(InvalidLockSpecError);
      expect((error as Error).message.length).toBeLessThan(250);
      await expect(one.locks.setLockPermits(name, 'write', 2)).rejects.toThrow(InvalidLockSpecError);
    }
    // The size is the name's, in the limit's unit: no count of the cut spec's characters beside it (issue 38).
    const ascii = 'a'.repeat(201);
    await expect(one.locks.tryLocks([`${ascii}_WRITE`])).rejects.toThrow(
      `Invalid lock spec "${'a'.repeat(79)}…: a lock name is at most 200 bytes of UTF-8 (this one has 201 bytes)`,
    );
    const spec = (await one.locks.tryLocks([`${ONE_BYTE_MORE}_WRITE`]).catch((e: unknown) => e)) as Error;
    expect(spec.message).toMatch(/…: a lock name is at most 200 bytes of UTF-8 \(this one has 201 bytes\)$/);
    expect(spec.message).not.toMatch(/characters/);
    expect(await tableSnapshot(db)).toEqual(before);
  });

  it('@WithLocks over HTTP locks the name built from the route, byte for byte, and answers 400 past 200 bytes', async () => {
    for (const key of ['ana@example.com', 'José', 'cafe\u0301', '😀', 'ORDERS']) {
      const response = await fetch(`${api.baseUrl}/users/${encodeURIComponent(key)}/lock`, { method: 'POST' });
      expect(response.status).toBe(201);
      expect(await response.json()).toEqual({ key, rows: [`user:${key}`] });
    }
    // Held elsewhere: the same name answers 423, its look-alikes do not.
    const held = await one.locks.tryLocks([{ name: 'user:café', mode: 'write' }]);
    expect((await fetch(`${api.baseUrl}/users/${encodeURIComponent('café')}/lock`, { method: 'POST' })).status).toBe(423);
    expect((await fetch(`${api.baseUrl}/users/${encodeURIComponent('cafe\u0301')}/lock`, { method: 'POST' })).status).toBe(201);
    expect((await fetch(`${api.baseUrl}/users/${encodeURIComponent('CAFÉ')}/lock`, { method: 'POST' })).status).toBe(201);
    await one.locks.releaseLocks(held);

    const before = await tableSnapshot(db);
    const fits = 'é'.repeat(97) + 'x'; // 'user:' (5 bytes) + 195 = 200 bytes
    expect((await fetch(`${api.baseUrl}/users/${encodeURIComponent(fits)}/lock`, { method: 'POST' })).status).toBe(201);
    const tooLong = await fetch(`${api.baseUrl}/users/${encodeURIComponent(`${fits}y`)}/lock`, { method: 'POST' });
    expect(tooLong.status).toBe(400);
    const body = (await tooLong.json()) as { message: string };
    expect(body.message).toMatch(/this one has 201 bytes\)$/);
    expect(body.message).not.toMatch(/characters/);
    expect(body.message).not.toContain(fits);
    expect(await tableSnapshot(db)).toEqual(before);
  });
});
