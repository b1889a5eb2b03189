/** One lock of a group, in the library's canonical form. */
export interface BenchLock {
  readonly name: string;
  readonly mode: 'read' | 'write';
}

/** A group of locks taken all-or-nothing. */
export type BenchGroup = readonly BenchLock[];

/** A workload: how many concurrent clients, which names, and the group each attempt asks for. */
export interface Workload {
  readonly id: 'W1' | 'W2' | 'W3';
  readonly description: string;
  readonly clients: number;
  readonly names: readonly string[];
  /** Read permits of every name (write permits are always 1). */
  readonly readPermits: number;
  nextGroup(): BenchGroup;
}

const W1_NAME = 'bench_w1';

/** W1: one client, always the same lock, in write mode. */
export const W1: Workload = {
  id: 'W1',
  description: '1 client x 1 lock (write)',
  clients: 1,
  names: [W1_NAME],
  readPermits: 1,
  nextGroup: () => [{ name: W1_NAME, mode: 'write' }],
};

const W2_NAMES: readonly string[] = Array.from({ length: 8 }, (_, i) => `bench_w2_${i}`);

/** W2: 16 clients over 8 names; each attempt = 1 write on a random name + 1 read on a different random name. */
export const W2: Workload = {
  id: 'W2',
  description: '16 clients x 8 names, group = 1 write + 1 read (read permits 1000)',
  clients: 16,
  names: W2_NAMES,
  readPermits: 1000,
  nextGroup: () => {
    const w = Math.floor(Math.random() * W2_NAMES.length);
    const r = (w + 1 + Math.floor(Math.random() * (W2_NAMES.length - 1))) % W2_NAMES.length;
    return [
      { name: W2_NAMES[w], mode: 'write' },
      { name: W2_NAMES[r], mode: 'read' },
    ];
  },
};

const W3_NAMES: readonly string[] = Array.from({ length: 64 }, (_, i) => `bench_w3_${i}`);
let w3Next = 0;

/**
 * W3: 16 clients, each attempt one write lock on the next of 64 names in turn: the clients hold distinct names (a
 * name comes round again 64 attempts later, long after its release), so nothing is busy and the database can commit
 * many grants with one flush (group commit). The floor's 16-client form is the bound.
 */
export const W3: Workload = {
  id: 'W3',
  description: '16 clients x 1 lock (write), distinct names (64 names taken in turn)',
  clients: 16,
  names: W3_NAMES,
  readPermits: 1,
  nextGroup: () => [{ name: W3_NAMES[w3Next++ % W3_NAMES.length] ?? 'bench_w3_0', mode: 'write' }],
};

export const WORKLOADS: readonly Workload[] = [W1, W2, W3];
