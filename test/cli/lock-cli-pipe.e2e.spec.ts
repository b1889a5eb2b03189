import { spawn } from 'node:child_process';
import type { Readable } from 'node:stream';
import { CLI } from '../support/cli-process.js';
import { createLockApp, type LockApp } from '../support/lock-app.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';

/** Grants held while the commands run: a status table of about 100 kB, more than a pipe holds (64 kB). */
const GRANTS = 1500;

/** What one shell pipeline did: the command line's exit status (`PIPESTATUS[0]`), and the pipeline's output. */
interface PipeRun {
  readonly status: number;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Runs `nestjs-db-locks <command> | head -1` in a real shell pipe (bash), the command line's stderr kept apart, and
 * answers its exit status as the shell saw it.
 */
function pipeToHead(command: string, env: Record<string, string>): Promise<PipeRun> {
  const script = `node "$CLI" ${command} | head -1; echo "status=\${PIPESTATUS[0]}" >&3`;
  const child = spawn('bash', ['-c', script], {
    env: { ...process.env, ...env, CLI },
    stdio: ['ignore', 'pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  let fd3 = '';
  const [, out, err, status] = child.stdio as unknown as [null, Readable, Readable, Readable];
  out.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  err.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  status.setEncoding('utf8').on('data', (chunk: string) => (fd3 += chunk));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', () => resolve({ status: Number(/status=(\d+)/.exec(fd3)?.[1] ?? NaN), stdout, stderr }));
  });
}

/**
 * `nestjs-db-locks … | head`: the reader goes away after one line while the command still writes. The command line
 * promises one line of error at most, never a stack trace: it stops quietly, with the status a shell gives a command
 * that wrote to a closed pipe (141, 128 + SIGPIPE, as git's).
 */
describe('nestjs-db-locks piped into head', () => {
  let db: TestDatabase;
  let holder: LockApp;
  let env: Record<string, string>;

  beforeAll(async () => {
    db = await createTestDatabase();
    env = { DATABASE_URL: db.url };
    holder = await createLockApp(db.url, { appId: 'pipe-holder', leaseMs: 120_000 });
    for (let from = 0; from < GRANTS; from += 100) {
      const stamps = await Promise.all(
        Array.from({ length: 100 }, (_, i) => holder.locks.tryLocks([`PIPE_NAME_${String(from + i).padStart(5, '0')}_WRITE`])),
      );
      expect(stamps.every((stamp) => stamp > 0)).toBe(true);
    }
  }, 120_000);
  afterAll(async () => {
    await holder?.close();
    await db?.drop();
  });

  it.each([
    ['status', /^Grants held now \(1500\)\n$/],
    ['log --limit 10000', /^STAMP {2}APP/],
    ['status --json', /^\{\n$/],
  ])('`%s | head -1` prints its first line, no stack and no error, and exits 141', async (command, first) => {
    const run = await pipeToHead(command, env);
    expect(run.stdout).toMatch(first);
    expect(run.stdout.split('\n')).toHaveLength(2); // one line
    expect(run.stderr).toBe('');
    expect(run.status).toBe(141);
  });

  it('the same command into a reader that takes everything still exits 0', async () => {
    const script = 'node "$CLI" status | wc -l; echo "status=${PIPESTATUS[0]}"';
    const child = spawn('bash', ['-c', script], { env: { ...process.env, ...env, CLI }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    await new Promise((resolve) => child.once('close', resolve));
    expect(stderr).toBe('');
    const [lines, status] = stdout.trim().split('\n');
    expect(Number(lines)).toBeGreaterThan(GRANTS);
    expect(status).toBe('status=0');
  });
});
