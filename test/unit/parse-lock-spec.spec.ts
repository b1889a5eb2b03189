import { InvalidLockSpecError, parseLockGroup, parseLockSpec } from 'nestjs-db-locks';

describe('parseLockSpec', () => {
  it('reads NAME_READ and NAME_WRITE', () => {
    expect(parseLockSpec('WS1_READ')).toEqual({ name: 'WS1', mode: 'read' });
    expect(parseLockSpec('WS2_WRITE')).toEqual({ name: 'WS2', mode: 'write' });
    expect(parseLockSpec('a.b:c-d/e_READ_WRITE')).toEqual({ name: 'a.b:c-d/e_READ', mode: 'write' });
  });

  it('reads the object form', () => {
    expect(parseLockSpec({ name: 'loan:42', mode: 'read' })).toEqual({ name: 'loan:42', mode: 'read' });
  });

  it.each([
    ['WS2_WRTE'],
    ['_READ'],
    ['WS1'],
    ['WS1_read'],
    [`${'x'.repeat(201)}_READ`],
    [`${'é'.repeat(100)}x_READ`],
    ['a\nb_READ'],
    ['trailing _READ'],
    ['half\ud83d_WRITE'],
  ])('refuses %j', (spec) => {
    expect(() => parseLockSpec(spec as never)).toThrow(InvalidLockSpecError);
  });

  it.each([[null], [undefined], [42], [{ name: 'A' }], [{ name: 'A', mode: 'READ' }], [{ name: '', mode: 'read' }]])(
    'refuses the value %j',
    (spec) => {
      expect(() => parseLockSpec(spec as never)).toThrow(InvalidLockSpecError);
    },
  );

  it('accepts a 200-character name', () => {
    expect(parseLockSpec(`${'x'.repeat(200)}_WRITE`).name).toHaveLength(200);
  });

  it('accepts any other string of up to 200 bytes of UTF-8, unchanged', () => {
    for (const name of ['ws 1', 'naïve', "x';DROP TABLE locking;--", 'ana@example.com', '😀'.repeat(50), 'cafe\u0301']) {
      expect(parseLockSpec(`${name}_READ`)).toEqual({ name, mode: 'read' });
      expect(parseLockSpec({ name, mode: 'write' })).toEqual({ name, mode: 'write' });
    }
  });

  it('keeps the message short: a long input is cut, with its length', () => {
    const error = (() => {
      try {
        parseLockSpec({ name: 'x'.repeat(10_000), mode: 'read' });
      } catch (e) {
        return e as InvalidLockSpecError;
      }
      return undefined;
    })();
    expect(error?.message).toMatch(/…: a lock name is at most 200 bytes of UTF-8 \(this one has 10000 bytes\)$/);
    expect(error!.message.length).toBeLessThan(200);
  });
});

describe('parseLockGroup', () => {
  it('sorts by name and collapses duplicates', () => {
    expect(parseLockGroup(['WS2_WRITE', 'WS1_READ', { name: 'WS1', mode: 'read' }])).toEqual([
      { name: 'WS1', mode: 'read' },
      { name: 'WS2', mode: 'write' },
    ]);
  });

  it('orders names by code point (the databases\' byte order), not by UTF-16 code unit', () => {
    // U+FF21 (fullwidth A) comes before U+1F600 in code points, after it in UTF-16 (a surrogate pair, 0xD83D...).
    expect(parseLockGroup(['😀_READ', 'Ａ_READ', 'A_READ']).map((r) => r.name)).toEqual(['A', 'Ａ', '😀']);
  });

  it('accepts a Set', () => {
    expect(parseLockGroup(new Set(['B_READ', 'A_WRITE'] as const))).toEqual([
      { name: 'A', mode: 'write' },
      { name: 'B', mode: 'read' },
    ]);
  });

  it('refuses an empty group, a bare string, and one name in both modes', () => {
    expect(() => parseLockGroup([])).toThrow(InvalidLockSpecError);
    expect(() => parseLockGroup('WS1_READ' as never)).toThrow(/array or a Set/);
    expect(() => parseLockGroup(['WS1_READ', 'WS1_WRITE'])).toThrow(/both for read and for write/);
    expect(() => parseLockGroup(null as never)).toThrow(InvalidLockSpecError);
  });

  it('refuses a group larger than 100 locks', () => {
    const specs = Array.from({ length: 101 }, (_, i) => `L${i}_READ` as const);
    expect(() => parseLockGroup(specs)).toThrow(/at most 100/);
    expect(parseLockGroup(specs.slice(0, 100))).toHaveLength(100);
  });

  it('reports the error with a typed, named error', () => {
    try {
      parseLockGroup(['WS2_WRTE'] as never);
      throw new Error('unreachable');
    } catch (error) {
      expect(error).toBeInstanceOf(InvalidLockSpecError);
      expect((error as InvalidLockSpecError).name).toBe('InvalidLockSpecError');
      expect((error as InvalidLockSpecError).spec).toBe('WS2_WRTE');
    }
  });
});
