import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { createLockApp } from '../support/lock-app.js';
import { deadProcessKey, processKeyOf } from '../support/dead-process.js';
import { startHolder } from '../support/holder-process.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';

const NOBODY = '65534';
const CHILD = fileURLToPath(new URL('../support/process-gone.child.mjs', import.meta.url));
const HOLDER = fileURLToPath(new URL('../support/holder.child.mjs', import.meta.url));
/** Mounts a `/proc` that hides other users' processes, in a mount namespace of its own, and runs `$0 "$@"` as nobody. */
const AS_NOBODY_UNDER_HIDEPID =
  `mount -t proc -o hidepid=2 proc /proc && exec setpriv --reuid=${NOBODY} --regid=${NOBODY} --clear-groups "$0" "$@"`;

/** The command line that runs `node args…` as nobody, under `hidepid=2`. */
const asNobody = (...args: string[]): string[] => ['-m', 'sh', '-c', AS_NOBODY_UNDER_HIDEPID, process.execPath, ...args];

/**
 * Whether this machine can run another user under `hidepid=2` (root, `unshare`, `setpriv`): else the spec is skipped,
 * or fails with REQUIRE_HIDEPID=1.
 */
function hidepidAvailable(): boolean {
  let reason: string | undefined;
  if (process.getuid?.() !== 0) reason = 'the tests do not run as root';
  else {
    try {
      execFileSync('unshare', ['-m', 'sh', '-c', AS_NOBODY_UNDER_HIDEPID, 'true'], { stdio: 'ignore' });
    } catch (error) {
      reason = `unshare -m with mount -t proc -o hidepid=2 and setpriv failed (${String(error)})`;
    }
  }
  if (!reason) return true;
  if (process.env.REQUIRE_HIDEPID === '1') throw new Error(`REQUIRE_HIDEPID=1 but ${reason}`);
  process.stderr.write(`${reason}: the hidepid=2 spec is skipped\n`);
  return false;
}

/** The first JSON line a child prints, or its exit code and stderr if it exits first. */
function firstLine(child: ChildProcess): Promise<{ line?: unknown; code?: number | null; stderr: string }> {
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve) => {
    createInterface({ input: child.stdout! }).once('line', (line) => resolve({ line: JSON.parse(line), stderr }));
    child.once('exit', (code) => setImmediate(() => resolve({ code, stderr })));
  });
}

const run = hidepidAvailable() ? describe : describe.skip;

// `/proc` mounted with hidepid=2 (hardened hosts) shows a user none of the other users' processes: `/proc/<pid>` of a
// live process of root reads as missing. A process must be proven gone (no such pid), not inferred from that.
run('/proc with hidepid=2: another user\'s live process is not taken for gone', () => {
  it('isProcessGone, run as nobody under hidepid=2, is false for a live process of root and true once it exited', async () => {
    const live = spawn('sleep', ['60']);
    try {
      const child = spawn('unshare', asNobody(CHILD, processKeyOf(live.pid!), await deadProcessKey()), {
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      expect(await firstLine(child)).toMatchObject({ line: [false, true] });
    } finally {
      live.kill('SIGKILL');
    }
  });

  describe('a twin of another user with the same appId', () => {
    let db: TestDatabase;
    beforeAll(async () => (db = await createTestDatabase()));
    afterAll(() => db.drop());

    it('does not free the grants of a live holder of root whose app id session ended', async () => {
      const holder = startHolder({ DATABASE_URL: db.url, APP_ID: 'hidden', LOCKS: 'HIDDEN_WRITE', LEASE_MS: '60000', RENEW_MS: '20000' });
      let twin: ChildProcess | undefined;
      try {
        const { stamp } = await holder.next('held');
        // The holder stops (a pause) and its sessions end (a terminated backend): its app id is free to claim, its
        // grant is still its own, and it would tell it lost only at its lease's end.
        holder.child.kill('SIGSTOP');
        await db.query(
          `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()
             AND application_name LIKE 'nestjs-db-locks %'`,
        );
        twin = spawn('unshare', asNobody(HOLDER), {
          env: { ...process.env, DATABASE_URL: db.url, APP_ID: 'hidden', LOCKS: 'OTHER_WRITE' },
          stdio: ['pipe', 'pipe', 'pipe'],
        });
        const started = await firstLine(twin);
        expect(started).toMatchObject({ line: { event: 'held' } }); // the app id was free: it started
        // Its start-up recovery left the live holder's grant alone: nobody else is granted the name.
        expect(await db.query('SELECT stamp FROM locking WHERE lock_name = $1', ['HIDDEN'])).toEqual([{ stamp: String(stamp) }]);
        const other = await createLockApp(db.url, { appId: 'other' });
        try {
          expect(await other.locks.tryLocks(['HIDDEN_WRITE'])).toBe(0);
        } finally {
          await other.close();
        }
      } finally {
        twin?.kill('SIGKILL');
        holder.child.kill('SIGCONT');
        await holder.kill();
      }
    });
  });
});
