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
    ['ws 1_READ'],
    ['WS1_read'],
    [`${'x'.repeat(201)}_READ`],
    ['naïve_READ'],
    ["x';DROP TABLE locking;--_READ"],
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
});

describe('parseLockGroup', () => {
  it('sorts by name and collapses duplicates', () => {
    expect(parseLockGroup(['WS2_WRITE', 'WS1_READ', { name: 'WS1', mode: 'read' }])).toEqual([
      { name: 'WS1', mode: 'read' },
      { name: 'WS2', mode: 'write' },
    ]);
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
