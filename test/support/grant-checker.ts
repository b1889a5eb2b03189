import type { LockPermits, LockRequest } from 'nestjs-db-locks';

/**
 * Watches grants as their holders see them and records every breach of DESIGN.md invariant 1: per name, writers ≤
 * write permits, readers ≤ read permits, never a writer together with a reader. A holder enters right after
 * `tryLocks` returned its stamp and leaves right before it calls `releaseLocks`, so the windows it watches lie
 * inside the real holding intervals: anything it sees overlapping did overlap.
 */
export class GrantChecker {
  readonly violations: string[] = [];
  private readonly held = new Map<string, { read: number; write: number }>();

  constructor(private readonly permitsOf: (name: string) => LockPermits) {}

  enter(group: readonly LockRequest[], stamp: number): void {
    for (const { name, mode } of group) {
      const counts = this.held.get(name) ?? { read: 0, write: 0 };
      counts[mode]++;
      this.held.set(name, counts);
      const permits = this.permitsOf(name);
      if (counts.read > 0 && counts.write > 0) this.violations.push(`${name}: reader and writer together (stamp ${stamp})`);
      if (counts.write > permits.write) this.violations.push(`${name}: ${counts.write} writers > ${permits.write}`);
      if (counts.read > permits.read) this.violations.push(`${name}: ${counts.read} readers > ${permits.read}`);
    }
  }

  leave(group: readonly LockRequest[]): void {
    for (const { name, mode } of group) this.held.get(name)![mode]--;
  }
}
