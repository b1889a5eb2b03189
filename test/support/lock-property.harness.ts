import { setTimeout as sleep } from 'node:timers/promises';
import { parseLockGroup, type LockPermits, type LockRequest, type LockService, type LockSpec } from 'nestjs-db-locks';
import { GrantChecker } from './grant-checker.js';
import { createLockApp, type LockApp } from './lock-app.js';
import { lockRows } from './lock-rows.js';
import type { TestDatabase } from './test-database.js';

/** What a property run observed. */
export interface PropertyRunResult {
  attempts: number;
  grants: number;
  /** Breaches of invariants 1 (seen by holders and in database snapshots) and 2 (partial or orphan groups). */
  violations: string[];
  /** Lock rows left once every worker has released. */
  leftoverRows: number;
}

/** Shape of a property run. */
export interface PropertyRunOptions {
  instances: number;
  workersPerInstance: number;
  attempts: number;
  names: readonly string[];
  /** Permits rows written before the run; names without one use `defaults`. */
  permits: Record<string, Partial<LockPermits>>;
  defaults: LockPermits;
}

/** The run of the concurrency property specs: 4 instances × 4 workers over 6 names with mixed permits. */
export const CONCURRENCY_RUN: PropertyRunOptions = {
  instances: 4,
  workersPerInstance: 4,
  attempts: 4000,
  names: ['N0', 'N1', 'N2', 'N3', 'N4', 'N5'],
  permits: { N0: { write: 2 }, N1: { read: 3 }, N3: { write: 3, read: 2 }, N4: { read: 5 } },
  defaults: { read: 2, write: 1 },
};

/**
 * Several `LockService` instances (distinct `appId`, own pools) take random groups concurrently while a checker
 * verifies DESIGN.md invariants 1–2 from the grants it observes and from snapshots of the `locking` table.
 */
export async function runLockProperty(db: TestDatabase, options: PropertyRunOptions): Promise<PropertyRunResult> {
  await writePermits(db, options.permits);
  const permitsOf = (name: string): LockPermits => ({ ...options.defaults, ...options.permits[name] });
  const checker = new GrantChecker(permitsOf);
  const apps: LockApp[] = [];
  for (let i = 0; i < options.instances; i++) {
    apps.push(
      await createLockApp(
        db.url,
        { appId: `prop-${i}`, defaultPermits: options.defaults },
        options.workersPerInstance,
      ),
    );
  }
  const granted = new Map<number, readonly LockRequest[]>();
  const snapshotViolations: string[] = [];
  const sampledStamps = new Set<number>();
  let attempts = 0;
  let running = true;

  const sampler = (async () => {
    while (running) {
      const rows = await lockRows(db);
      const perName = new Map<string, { R: number; W: number }>();
      const perStamp = new Map<number, string[]>();
      for (const row of rows) {
        const counts = perName.get(row.lock_name) ?? { R: 0, W: 0 };
        counts[row.mode]++;
        perName.set(row.lock_name, counts);
        const stamp = Number(row.stamp);
        perStamp.set(stamp, [...(perStamp.get(stamp) ?? []), `${row.lock_name}:${row.mode}`]);
        sampledStamps.add(stamp);
      }
      for (const [name, counts] of perName) {
        const permits = permitsOf(name);
        if ((counts.R > 0 && counts.W > 0) || counts.W > permits.write || counts.R > permits.read) {
          snapshotViolations.push(`snapshot: ${name} held by ${counts.W} writers and ${counts.R} readers`);
        }
      }
      for (const [stamp, members] of perStamp) {
        const group = granted.get(stamp);
        const expected = group?.map((r) => `${r.name}:${r.mode === 'read' ? 'R' : 'W'}`).sort();
        if (expected && expected.join() !== members.sort().join()) {
          snapshotViolations.push(`snapshot: stamp ${stamp} has rows ${members} but was granted ${expected}`);
        }
      }
      await sleep(5);
    }
  })();

  const worker = async (app: LockApp) => {
    while (attempts < options.attempts) {
      attempts++;
      await attemptRandomGroup(app.locks, options.names, checker, granted);
    }
  };
  try {
    await Promise.all(apps.flatMap((app) => Array.from({ length: options.workersPerInstance }, () => worker(app))));
  } finally {
    running = false;
    await sampler;
    await Promise.all(apps.map((app) => app.close()));
  }
  // A wait that gives up on an attempt still running at its deadline releases what that attempt grants too late (no
  // caller ever holds it): such a stamp ends RELEASED by its own app. Any other stamp no caller got is a leak.
  const unreturned = [...sampledStamps].filter((stamp) => !granted.has(stamp));
  const released = new Set(
    unreturned.length === 0
      ? []
      : (
          await db.query<{ stamp: string | number }>(
            `SELECT stamp FROM locking_log WHERE status = 'RELEASED' AND stamp IN (${unreturned.join(', ')})`,
          )
        ).map((row) => Number(row.stamp)),
  );
  const orphans = unreturned.filter((stamp) => !released.has(stamp));
  return {
    attempts,
    grants: granted.size,
    violations: [
      ...checker.violations,
      ...snapshotViolations,
      ...orphans.map((stamp) => `stamp ${stamp} had rows but was never returned to a caller, nor released`),
    ],
    leftoverRows: (await lockRows(db)).length,
  };
}

/** Writes a permits row for every (name, mode) given. */
export async function writePermits(db: TestDatabase, permits: Record<string, Partial<LockPermits>>): Promise<void> {
  for (const [name, byMode] of Object.entries(permits)) {
    for (const mode of ['read', 'write'] as const) {
      const value = byMode[mode];
      if (value !== undefined) {
        await db.query(`INSERT INTO locking_permissions VALUES ($1, $2, $3)`, [name, mode === 'read' ? 'R' : 'W', value]);
      }
    }
  }
}

/**
 * One attempt of a property run's worker: a random group of `names`, taken (a third of the attempts wait a little:
 * the notification path must not change what is granted), held a moment under `checker`'s eye, released. Every
 * grant is recorded in `granted`.
 */
export async function attemptRandomGroup(
  locks: LockService,
  names: readonly string[],
  checker: GrantChecker,
  granted: Map<number, readonly LockRequest[]>,
): Promise<void> {
  const specs = randomGroup(names);
  const group = parseLockGroup(specs);
  const stamp = await locks.tryLocks(specs, Math.random() < 0.3 ? { waitMs: 20 } : {});
  if (stamp === 0) return;
  granted.set(stamp, group);
  checker.enter(group, stamp);
  await sleep(Math.random() * 3);
  checker.leave(group);
  await locks.releaseLocks(stamp);
}

/** One to three of `names`, each for read or for write at random. */
export function randomGroup(names: readonly string[]): LockSpec[] {
  const size = 1 + Math.floor(Math.random() * 3);
  const picked = [...names].sort(() => Math.random() - 0.5).slice(0, size);
  return picked.map((name) => `${name}_${Math.random() < 0.5 ? 'READ' : 'WRITE'}` as LockSpec);
}
