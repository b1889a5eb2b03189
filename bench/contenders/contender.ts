import type { BenchGroup, Workload } from '../workloads.js';

/** One client of a contender: one connection (or one async loop) that attempts groups one after another. */
export interface ContenderClient {
  /** Tries to take the group; when granted, releases it at once. Resolves true when granted, false when busy. */
  attempt(group: BenchGroup): Promise<boolean>;
}

/** A contender opened for one workload. */
export interface ContenderSession {
  readonly clients: readonly ContenderClient[];
  /** Retries counted since the session opened. */
  retries(): number;
  close(): Promise<void>;
}

/** Stable identifiers of the contenders, used by the targets. */
export type ContenderId =
  | 'floor-sync'
  | 'floor-async'
  | 'rows-lock'
  | 'rows-lock-log'
  | 'library'
  | 'library-baseline'
  | 'library-telemetry-off'
  | 'library-telemetry-on'
  | 'library-metrics-only'
  | 'advisory'
  | 'seed'
  | 'library-mysql'
  | 'library-mysql-v1'
  | 'library-mysql-no-batch'
  | 'library-mysql-doorbell-release'
  | 'floor-mysql'
  | 'get-lock';

/** A way of taking locks that the benchmark measures. */
export interface Contender {
  readonly id: ContenderId;
  readonly name: string;
  open(workload: Workload): Promise<ContenderSession>;
}
