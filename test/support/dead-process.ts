import { spawn } from 'node:child_process';
import { readFileSync, readlinkSync } from 'node:fs';
import type { TestDatabase } from './test-database.js';

/** The key `processKey()` gives the process `pid` (read from outside it, while it runs). */
export function processKeyOf(pid: number): string {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const started = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  const boot = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
  return `${boot}/${readlinkSync(`/proc/${pid}/ns/pid`)}/${pid}/${started}`;
}

/** The key of a process of this machine that ran and has exited (killed with SIGKILL, as a crash). */
export async function deadProcessKey(): Promise<string> {
  const child = spawn('sleep', ['30']);
  const key = processKeyOf(child.pid!);
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGKILL');
  await exited;
  return key;
}

/**
 * Records, as the last holder of `appId`, a process of this machine that was killed: what an instance that crashed
 * leaves in `locking_instances` (for tests that make its leftover rows by SQL).
 */
export async function recordCrashedHolder(db: TestDatabase, appId: string): Promise<void> {
  await db.query(
    `INSERT INTO locking_instances (app_id, instance, process_key, claimed) VALUES ($1, 'crashed', $2, CURRENT_TIMESTAMP)`,
    [appId, await deadProcessKey()],
  );
}
