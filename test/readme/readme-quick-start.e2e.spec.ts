import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import { closedPort } from '../support/cli-process.js';
import { createLockApp, type LockApp } from '../support/lock-app.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { REPO_ROOT as root } from './documents.js';
import { until } from '../support/until.js';

/**
 * The README's Quick start, run as it is printed: its first TypeScript block (a whole application, its `loans` table
 * and health check included) transpiled and started as `node main.js` on an empty database with `DATABASE_URL`,
 * `APP_ID` and `PORT`, as a user who copied it would. It imports the built package (`dist/`, `npm run build`).
 */
function quickStartCode(): string {
  const readme = readFileSync(join(root, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('\n## Quick start\n'));
  const block = /^```ts\n([\s\S]*?)^```$/m.exec(section);
  if (!block?.[1]) throw new Error('the README has no TypeScript block under "## Quick start"');
  return block[1];
}

async function post(url: string, body: unknown): Promise<{ status: number; headers: Headers; body: unknown }> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: response.status, headers: response.headers, body: await response.json() };
}

describe('README: the Quick start as printed', () => {
  let db: TestDatabase;
  let app: ChildProcess | undefined;
  let other: LockApp | undefined;
  let output = '';
  let base = '';

  beforeAll(async () => {
    db = await createTestDatabase({ migrate: false });
    const outDir = join(root, 'build', 'readme-quick-start');
    mkdirSync(outDir, { recursive: true });
    const { outputText } = ts.transpileModule(quickStartCode(), {
      compilerOptions: {
        target: ts.ScriptTarget.ES2022,
        module: ts.ModuleKind.ES2022,
        experimentalDecorators: true,
        emitDecoratorMetadata: true,
      },
    });
    const main = join(outDir, 'main.mjs');
    writeFileSync(main, outputText);
    const port = await closedPort();
    base = `http://127.0.0.1:${port}`;
    app = spawn(process.execPath, [main], {
      env: { ...process.env, DATABASE_URL: db.url, APP_ID: 'api-1', PORT: String(port), NO_COLOR: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    for (const stream of [app.stdout, app.stderr]) stream?.setEncoding('utf8').on('data', (c: string) => (output += c));
    await until(() => fetch(`${base}/health`).then((r) => r.ok, () => false), 60_000).catch((error: Error) => {
      throw new Error(`the Quick start never answered /health (${error.message}):\n${output}`);
    });
  }, 120_000);

  afterAll(async () => {
    await other?.close();
    if (app && app.exitCode === null) {
      const exited = new Promise((done) => app!.once('exit', done));
      app.kill('SIGTERM');
      await exited;
    }
    await db?.drop();
  });

  it('creates its loans table and repays a loan under its lock', async () => {
    const repaid = await post(`${base}/loans/1/repayments`, { amountCents: 2500 });
    expect(repaid).toMatchObject({ status: 201, body: { id: 1, balance: 97500 } });
    expect(await db.query('SELECT id, balance FROM loans ORDER BY id')).toEqual([
      { id: 1, balance: 97500 },
      { id: 2, balance: 50000 },
    ]);
    const [entry] = await db.query<{ status: string; business_done: Date | null }>(
      "SELECT status, business_done FROM locking_log WHERE app_id = 'api-1' ORDER BY stamp DESC LIMIT 1",
    );
    expect(entry).toMatchObject({ status: 'RELEASED' });
    expect(entry?.business_done).not.toBeNull(); // the fenced transaction recorded "business done"
  });

  it('answers 423 with Retry-After: 1 while another replica repays the same loan, and repays another loan', async () => {
    other = await createLockApp(db.url, { appId: 'api-2' });
    const stamp = await other.locks.tryLocks(['loan:1_WRITE']);
    expect(stamp).toBeGreaterThan(0);
    const refused = await post(`${base}/loans/1/repayments`, { amountCents: 100 });
    expect(refused.status).toBe(423);
    expect(refused.headers.get('retry-after')).toBe('1');
    expect((await post(`${base}/loans/2/repayments`, { amountCents: 100 })).status).toBe(201);
    await other.locks.releaseLocks(stamp);
    expect(await post(`${base}/loans/1/repayments`, { amountCents: 100 })).toMatchObject({
      status: 201,
      body: { balance: 97400 },
    });
  });

  it('answers 400 to an id the pipe refuses, taking no lock, and 404 to an unknown loan', async () => {
    expect((await post(`${base}/loans/abc/repayments`, { amountCents: 1 })).status).toBe(400);
    expect((await post(`${base}/loans/1/repayments`, { amountCents: 'x' })).status).toBe(400);
    expect((await post(`${base}/loans/9/repayments`, { amountCents: 1 })).status).toBe(404);
    expect(await db.query('SELECT * FROM locking')).toEqual([]);
  });

  it('answers its health check up', async () => {
    const response = await fetch(`${base}/health`);
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({
      status: 'ok',
      info: { locks: { status: 'up', appId: 'api-1', appIdHeld: true, fenced: false, database: 'reachable' } },
    });
    expect(output).not.toMatch(/ERROR/);
  });
});
