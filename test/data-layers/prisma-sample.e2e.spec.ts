import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { LockAdminService } from 'nestjs-db-locks';
import { closedPort } from '../support/cli-process.js';
import { createLockApp, type LockApp } from '../support/lock-app.js';
import { until } from '../support/until.js';
import { REPO_ROOT as root } from '../readme/documents.js';
import { assertSampleBuilt } from '../sample-app/support/sample-process.js';

const page = readFileSync(join(root, 'docs/prisma.md'), 'utf8');
const readme = readFileSync(join(root, 'README.md'), 'utf8');
const scripts = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;

/** The node command `npm run start:prisma` ends with, once it built the library and the sample. */
function startCommand(): string[] {
  const last = scripts['start:prisma']?.split('&&').at(-1)?.trim().split(/\s+/);
  if (last?.[0] !== 'node') throw new Error(`npm run start:prisma does not end with a node command: ${scripts['start:prisma']}`);
  return last.slice(1);
}

/** The repayment docs/prisma.md prints under its sample's command, and the answer it prints under it. */
function printedRepayment(): { path: string; body: unknown; answer: unknown } {
  const printed = /curl -X POST -H 'Content-Type: application\/json' -d '([^']+)' localhost:3000(\S+)\n# (\{.*\})\n/.exec(page);
  if (!printed) throw new Error('docs/prisma.md prints no curl of the sample with its answer');
  return { body: JSON.parse(printed[1]!), path: printed[2]!, answer: JSON.parse(printed[3]!) };
}

/** One run of the sample as a child process. */
interface Sample {
  readonly child: ChildProcess;
  readonly base: string;
  output(): string;
  readonly exited: Promise<number | null>;
}

/**
 * Runs `npm run start:prisma`'s node command with `env` (on a free port) and resolves once it printed its address, or
 * once it exited (`base` is then empty). `DATABASE_URL` is the one of `env` only.
 */
async function startSample(env: Record<string, string>): Promise<Sample> {
  const port = await closedPort();
  const base = `http://127.0.0.1:${port}`;
  const { DATABASE_URL: _ignored, ...inherited } = process.env;
  const child = spawn(process.execPath, startCommand(), {
    cwd: root,
    env: { ...inherited, NO_COLOR: '1', PORT: String(port), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  for (const stream of [child.stdout, child.stderr]) stream?.setEncoding('utf8').on('data', (c: string) => (output += c));
  const exited = new Promise<number | null>((done) => child.once('exit', (code) => done(code)));
  let ended = false;
  void exited.then(() => (ended = true));
  await until(() => output.includes(`${base}/loans/1/repayments`) || ended, 90_000).catch(() => undefined);
  return { child, base: output.includes(`${base}/loans/1/repayments`) ? base : '', output: () => output, exited };
}

/** Stops `sample` as Ctrl+C does, and resolves with its exit code. */
async function interrupt(sample: Sample | undefined): Promise<number | null | undefined> {
  if (!sample) return undefined;
  if (sample.child.exitCode === null && sample.child.signalCode === null) sample.child.kill('SIGINT');
  return sample.exited;
}

async function post(url: string, amountCents: number): Promise<{ status: number; retryAfter: string | null; body: unknown }> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ amountCents }),
  });
  return { status: response.status, retryAfter: response.headers.get('retry-after'), body: await response.json() };
}

/**
 * The Prisma sample (sample-app/prisma/) started as docs/prisma.md says, `npm run start:prisma` on an embedded
 * PostgreSQL of its own (the script's last step: the suite has built the library and the sample), and used over HTTP.
 * A repayment is held mid-transaction by a row lock the test takes on the loan (`SELECT … FOR UPDATE`): the
 * repayment waits at its UPDATE with its grant held, so that a second repayment or a forced release meets it there.
 */
describe('the Prisma sample as docs/prisma.md starts it', () => {
  let dataDir: string;
  let sample: Sample;
  let base = '';
  let dbUrl = '';
  let db: pg.Client;
  let admin: LockApp;

  /** Takes the row of `loanId` in a transaction of the test's, so that a repayment of it waits at its UPDATE. */
  async function holdLoanRow(loanId: number): Promise<() => Promise<void>> {
    const holder = new pg.Client({ connectionString: dbUrl });
    await holder.connect();
    await holder.query('BEGIN');
    await holder.query('SELECT balance FROM loans WHERE id = $1 FOR UPDATE', [loanId]);
    return async () => {
      await holder.query('ROLLBACK');
      await holder.end();
    };
  }

  /** How many repayments wait at their UPDATE of a loan, behind the row the test holds. */
  const waiting = async (): Promise<number> =>
    (
      await db.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'UPDATE%loans%'",
      )
    ).rows[0]!.n;
  const waitingRepayments = (n: number): Promise<void> => until(async () => (await waiting()) === n, 10_000);

  /**
   * The answer to `request` sent while `n - 1` repayments wait behind the test's row, or `'ran beside them'` once it
   * waits there too: it was granted a lock it should have been refused (failing, rather than hanging on the row).
   */
  async function answerBesideWaiting(
    request: ReturnType<typeof post>,
    n: number,
  ): Promise<Awaited<ReturnType<typeof post>> | 'ran beside them'> {
    let answered = false;
    void request.finally(() => (answered = true)).catch(() => undefined);
    await until(async () => answered || (await waiting()) >= n, 10_000);
    return answered ? await request : 'ran beside them';
  }

  const repayments = async (loanId: number): Promise<number> =>
    (await db.query<{ n: number }>('SELECT count(*)::int AS n FROM repayments WHERE loan_id = $1', [loanId])).rows[0]!.n;
  const balance = async (loanId: number): Promise<number> =>
    (await db.query<{ balance: number }>('SELECT balance FROM loans WHERE id = $1', [loanId])).rows[0]!.balance;

  beforeAll(async () => {
    assertSampleBuilt(join(root, 'sample-app', 'prisma', 'src'));
    dataDir = mkdtempSync(join(tmpdir(), 'ndl-prisma-sample-'));
    sample = await startSample({ SAMPLE_DATA_DIR: join(dataDir, 'pg') });
    if (!sample.base) throw new Error(`the Prisma sample did not start:\n${sample.output()}`);
    base = sample.base;
    // Its embedded server's port, from the data directory's postmaster.pid (line 4).
    const serverPort = readFileSync(join(dataDir, 'pg', 'postmaster.pid'), 'utf8').split('\n')[3];
    dbUrl = `postgres://postgres:postgres@127.0.0.1:${serverPort}/postgres`;
    db = new pg.Client({ connectionString: dbUrl });
    await db.connect();
    admin = await createLockApp(dbUrl, { appId: 'prisma-sample-admin' });
  }, 120_000);

  afterAll(async () => {
    // Closed already by the last test, unless a test before it failed.
    await admin?.close().catch(() => undefined);
    await db?.end().catch(() => undefined);
    await interrupt(sample); // when a test failed before its own Ctrl+C
    rmSync(dataDir, { recursive: true, force: true });
  }, 60_000);

  it('is the command the README and the page print, on no TypeORM of its own', () => {
    expect(page).toContain('npm run start:prisma');
    expect(readme).toContain('npm run start:prisma');
    expect(startCommand()).toEqual(['build/sample-app/prisma/src/main.js']);
    for (const file of ['app.module.ts', 'repayment.service.ts', 'loans.controller.ts', 'prisma.service.ts', 'main.ts']) {
      expect(readFileSync(join(root, 'sample-app/prisma/src', file), 'utf8')).not.toMatch(/from '(typeorm|@nestjs\/typeorm)'/);
    }
  });

  it('repays a loan as the page prints it, recording business done in the fenced transaction', async () => {
    const { path, body, answer } = printedRepayment();
    const response = await fetch(`${base}${path}`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify(body),
    });
    expect({ status: response.status, body: await response.json() }).toEqual({ status: 201, body: answer });
    expect(await repayments(1)).toBe(1);
    const { rows } = await db.query<{ status: string; business_done: Date | null }>(
      "SELECT status, business_done FROM locking_log WHERE app_id = 'prisma-1' ORDER BY stamp DESC LIMIT 1",
    );
    expect(rows[0]).toMatchObject({ status: 'RELEASED' });
    expect(rows[0]?.business_done).not.toBeNull();
    expect(sample.output()).not.toMatch(/ERROR/);
  });

  it('answers 404 for an unknown loan and writes nothing (the runner rolls its transaction back)', async () => {
    expect(await post(`${base}/loans/404/repayments`, 100)).toMatchObject({ status: 404 });
    expect(await repayments(404)).toBe(0);
    const { rows } = await db.query("SELECT count(*)::int AS n FROM locking WHERE lock_name = 'loan:404'");
    expect(rows).toEqual([{ n: 0 }]);
  });

  it('refuses a second repayment of a loan with 423 while the first runs: only the first commits', async () => {
    const before = await balance(2);
    const release = await holdLoanRow(2);
    let first: Promise<Awaited<ReturnType<typeof post>>> | undefined;
    try {
      first = post(`${base}/loans/2/repayments`, 100);
      await waitingRepayments(1);
      const second = await answerBesideWaiting(post(`${base}/loans/2/repayments`, 300), 2);
      expect(second).toMatchObject({ status: 423, retryAfter: '1' });
      expect((await post(`${base}/loans/1/repayments`, 1)).status).toBe(201); // another loan, another lock
    } finally {
      await release();
    }
    expect(await first).toMatchObject({ status: 201, body: { id: 2, balance: before - 100 } });
    expect(await repayments(2)).toBe(1);
    expect(await balance(2)).toBe(before - 100);
  });

  it('answers 409 and writes nothing when the grant is forced free mid-repayment; the next holder commits alone', async () => {
    const before = await balance(1);
    const committed = await repayments(1);
    const release = await holdLoanRow(1);
    let lost: Promise<Awaited<ReturnType<typeof post>>> | undefined;
    let next: Promise<Awaited<ReturnType<typeof post>>> | undefined;
    try {
      lost = post(`${base}/loans/1/repayments`, 1000);
      await waitingRepayments(1);
      const { rows } = await db.query<{ stamp: string }>("SELECT stamp FROM locking WHERE lock_name = 'loan:1'");
      expect(rows).toHaveLength(1);
      await admin.app.get(LockAdminService).forceRelease(Number(rows[0]!.stamp), 'stuck repayment');
      // The lock is free: a second repayment of the loan takes it, and reads the balance the first one read.
      next = post(`${base}/loans/1/repayments`, 300);
      await waitingRepayments(2);
    } finally {
      await release();
    }
    expect(await lost).toMatchObject({ status: 409 });
    expect(await next).toMatchObject({ status: 201, body: { id: 1, balance: before - 300 } });
    expect(await repayments(1)).toBe(committed + 1);
    expect(await balance(1)).toBe(before - 300);
  });

  it('runs on DATABASE_URL instead, PostgreSQL only', async () => {
    const second = await startSample({ DATABASE_URL: dbUrl, APP_ID: 'prisma-2' });
    try {
      expect(second.base).not.toBe('');
      expect(second.output()).toContain('Prisma loan sample (prisma-2');
      expect(await post(`${second.base}/loans/2/repayments`, 5)).toMatchObject({ status: 201 });
      const { rows } = await db.query("SELECT status FROM locking_log WHERE app_id = 'prisma-2' AND business_done IS NOT NULL");
      expect(rows).toEqual([{ status: 'RELEASED' }]);
    } finally {
      expect(await interrupt(second)).toBe(0);
    }
    const mysql = await startSample({ DATABASE_URL: 'mysql://root@127.0.0.1:1/loans' });
    expect(await mysql.exited).toBe(1);
    expect(mysql.output()).toContain('the Prisma sample runs on PostgreSQL only');
  }, 120_000);

  it('closes on Ctrl+C, then stops its embedded PostgreSQL', async () => {
    await admin.close();
    await db.end();
    const before = sample.output().length; // the 409's lost grant was logged as an ERROR: rightly
    expect(await interrupt(sample)).toBe(0);
    expect(existsSync(join(dataDir, 'pg', 'PG_VERSION'))).toBe(true);
    expect(existsSync(join(dataDir, 'pg', 'postmaster.pid'))).toBe(false); // stopped, and cleanly
    expect(sample.output().slice(before)).not.toMatch(/ERROR/);
  }, 60_000);
});
