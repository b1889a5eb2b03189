// The Galera line of `npm run bench` (issue 49): two instances of an application on two nodes of a private 3-node
// MariaDB Galera cluster on this machine (test/support/galera-cluster.mjs): uncontended cycles, one shared name, and
// the hand-off from a holder on one node to a waiter on another. No target: the issue asks for the line. Skipped
// (with the reason) where galera-4 is not installed; `BENCH_ONLY=galera` runs it alone.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LOCK_MIGRATIONS, LockService } from 'nestjs-db-locks';
import { DataSource } from 'typeorm';
// The tests' Galera cluster (plain JavaScript, shared with their global setup).
import { galeraInstalled, galeraMissing, startGaleraCluster } from '../test/support/galera-cluster.mjs';
import { bootApplication } from './contenders/library.contender.js';
import { onMysql } from './contenders/mysql-clients.js';
import { handoffs, summary } from './handoff.js';

/** Callers per instance. */
const CALLERS = 8;

/** What one loop of the instances' callers did. */
interface LoopResult {
  readonly grants: number;
  readonly attempts: number;
  readonly retries: number;
  /** Times a caller found another holder inside the shared name (from the holders' side: must be 0). */
  readonly overGrants: number;
}

/**
 * `CALLERS` callers on each of `locks` for `ms`, each taking `nameOf(instance, caller)` (write) without waiting and
 * releasing it; a witness counts the holders inside each name.
 */
async function loop(locks: readonly LockService[], ms: number, nameOf: (instance: number, caller: number) => string): Promise<LoopResult> {
  const inside = new Map<string, number>();
  const retriesBefore = locks.map((l) => l.getStats().retries);
  let grants = 0;
  let attempts = 0;
  let overGrants = 0;
  const until = performance.now() + ms;
  await Promise.all(
    locks.flatMap((service, instance) =>
      Array.from({ length: CALLERS }, async (_, caller) => {
        const name = nameOf(instance, caller);
        while (performance.now() < until) {
          attempts++;
          const stamp = await service.tryLocks([`${name}_WRITE`]);
          if (stamp === 0) continue;
          grants++;
          const count = (inside.get(name) ?? 0) + 1;
          inside.set(name, count);
          if (count > 1) overGrants++;
          await new Promise((resolve) => setImmediate(resolve));
          inside.set(name, (inside.get(name) ?? 1) - 1);
          await service.releaseLocks(stamp);
        }
      }),
    ),
  );
  const retries = locks.reduce((sum, l, i) => sum + l.getStats().retries - (retriesBefore[i] ?? 0), 0);
  return { grants, attempts, retries, overGrants };
}

/** The Galera lines, or why they are skipped. */
export async function runGaleraBench(seconds: number, rounds: number): Promise<string[]> {
  if (!galeraInstalled()) return [`Galera line skipped: missing ${galeraMissing().join(', ')} (apt-get install galera-4 rsync).`];
  const parent = mkdtempSync(join(tmpdir(), 'ndl-bench-galera-'));
  // The nodes and their timers are unref'd (made for Jest): keep the process alive until they are stopped.
  const keepAlive = setInterval(() => undefined, 1000);
  const cluster = await startGaleraCluster(parent);
  try {
    const [first, second] = cluster.urls.map((url) => url.replace(/\/mysql$/, '/ndl_bench_galera'));
    await onMysql(cluster.urls[0]!, (c) => c.query('CREATE DATABASE ndl_bench_galera'));
    const migrations = new DataSource({ type: 'mariadb', url: first!, migrations: [...LOCK_MIGRATIONS] });
    await migrations.initialize();
    await migrations.runMigrations();
    await migrations.destroy();
    // Node 2 applies the migrations' writesets after node 1 committed them: a causal read waits until it has.
    await onMysql(second!, async (c) => {
      await c.query('SET SESSION wsrep_sync_wait = 1');
      await c.query('SELECT COUNT(*) FROM locking_log');
    });
    const a = await bootApplication(first!, 'bench-galera-a');
    const b = await bootApplication(second!, 'bench-galera-b');
    try {
      const locks = [a.get(LockService), b.get(LockService)];
      const own = await loop(locks, seconds * 1000, (instance, caller) => `galera_${instance}_${caller}`);
      const shared = await loop(locks, seconds * 1000, () => 'galera_hot');
      const across = summary('node 1 → node 2', await handoffs(rounds, locks[0]!, locks[1]!, (g) => locks[1]!.tryLocks(g, { waitMs: 10_000 })));
      const row = (label: string, r: LoopResult) =>
        `| ${label.padEnd(44)} | ${(r.grants / seconds).toFixed(0).padStart(8)} | ${(r.retries / Math.max(1, r.grants)).toFixed(3).padStart(17)} | ${String(r.overGrants).padStart(11)} |`;
      return [
        `Galera (MariaDB + galera-4, 3 nodes on this machine; instance A on node 1, B on node 2, ${CALLERS} callers each, ${seconds} s per row):`,
        '',
        `| ${'workload'.padEnd(44)} | grants/s | retries per grant | over-grants |`,
        `|${'-'.repeat(46)}|---------:|------------------:|------------:|`,
        row('uncontended: each caller its own name', own),
        row('one shared name (tryLocks, no wait)', shared),
        '',
        `Hand-off across nodes (holder on node 1 releases, waiter on node 2 acquires; doorbell rung by a write of its ` +
          `rings row): median ${across.medianMs.toFixed(2)} ms, p99 ${across.p99Ms.toFixed(2)} ms (${across.samples} hand-offs)`,
      ];
    } finally {
      await a.close();
      await b.close();
    }
  } finally {
    await cluster.stop();
    clearInterval(keepAlive);
    rmSync(parent, { recursive: true, force: true });
  }
}
