import type { SoakRun } from './fault-soak.js';

/**
 * The soak's promises judged from the holders' side, shared by the soaks (test/faults/fault-soak.spec.ts and
 * hot-name-soak.spec.ts): no two unpaused holders of a name at once and tokens in grant order, the fenced counter
 * exact, every holder whose grant ended without its own release told, typed errors only and a bounded close.
 * `run` gives the finished run (the soak runs in the spec's `beforeAll`).
 */
export function judgedFromTheHoldersSide(run: () => SoakRun): void {
  it('never lets two unpaused holders of a name overlap, and hands out tokens in grant order', () => {
    expect(run().verdict.overlaps).toEqual([]);
    expect(run().verdict.tokens).toEqual([]);
  });

  it('keeps the fenced counter exact: every acknowledged commit, nothing a lost holder wrote', () => {
    expect(run().verdict.fenced).toEqual([]);
  });

  it('tells every holder whose grant ended without its own release', () => {
    expect(run().verdict.untold).toEqual([]);
  });

  it('answers callers with typed errors only, and every worker closes in bounded time', () => {
    expect(run().verdict.untyped).toEqual([]);
    expect(run().hung).toEqual([]);
  });
}
