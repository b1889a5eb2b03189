import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { closedPort } from '../../support/cli-process.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const SOURCES = join(ROOT, 'sample-app', 'src');
const BUILT = join(ROOT, 'build', 'sample-app', 'src');

/**
 * Refuses to test a missing or stale build of the sample (`npm test` runs `npm run build:tools` first): a child
 * process runs `build/`, not the sources the test was written against.
 */
export function assertSampleBuilt(dir = SOURCES): void {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const source = join(dir, entry.name);
    if (entry.isDirectory()) {
      assertSampleBuilt(source);
      continue;
    }
    if (!/\.(ts|js)$/.test(entry.name) || entry.name.endsWith('.d.ts')) continue;
    const built = join(BUILT, relative(SOURCES, source)).replace(/\.ts$/, '.js');
    if (!existsSync(built) || statSync(built).mtimeMs < statSync(source).mtimeMs) {
      throw new Error(`${relative(ROOT, built)} is missing or older than its source: run npm run build:tools`);
    }
  }
}

/** One `npm start` of the sample (`node build/sample-app/src/main.js`) as a child process. */
export interface SampleProcess {
  readonly child: ChildProcess;
  readonly baseUrl: string;
  /** Everything it printed so far, stdout and stderr. */
  output(): string;
  /** Resolves once it printed a line containing `text`. */
  printed(text: string): Promise<void>;
  /**
   * Ctrl+C as a terminal sends it: SIGINT to the whole process group (the sample runs in a group of its own, as a
   * foreground job does), so every process the sample started in that group gets it too.
   */
  interrupt(): void;
  /** Its exit. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/**
 * Starts the built sample with `env` (no colours, on a free port of 127.0.0.1) and resolves once its banner names the
 * console's address. Fails with its output when it exits first or takes longer than `timeoutMs`.
 */
export async function startSampleProcess(env: Record<string, string>, timeoutMs = 90_000): Promise<SampleProcess> {
  assertSampleBuilt();
  const port = await closedPort();
  const { DATABASE_URL: _ignored, ...inherited } = process.env;
  const child = spawn(process.execPath, [join(BUILT, 'main.js')], {
    cwd: ROOT,
    env: { ...inherited, NO_COLOR: '1', HOST: '127.0.0.1', PORT: String(port), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let output = '';
  const watchers: Array<{ text: string; done: () => void }> = [];
  for (const stream of [child.stdout, child.stderr]) {
    stream?.setEncoding('utf8').on('data', (chunk: string) => {
      output += chunk;
      for (const watcher of watchers.filter((w) => output.includes(w.text))) {
        watchers.splice(watchers.indexOf(watcher), 1);
        watcher.done();
      }
    });
  }
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  const printed = (text: string, within = timeoutMs): Promise<void> =>
    new Promise((resolve, reject) => {
      if (output.includes(text)) return resolve();
      const timer = setTimeout(() => reject(new Error(`the sample never printed "${text}":\n${output}`)), within);
      watchers.push({ text, done: () => (clearTimeout(timer), resolve()) });
      void exited.then(({ code, signal }) => {
        clearTimeout(timer);
        if (!output.includes(text)) reject(new Error(`the sample ended (${signal ?? code}) before "${text}":\n${output}`));
      });
    });
  const baseUrl = `http://127.0.0.1:${port}`;
  try {
    await printed(`lock console: ${baseUrl}/`);
  } catch (error) {
    if (child.exitCode === null) process.kill(-child.pid!, 'SIGKILL');
    throw error;
  }
  return {
    child,
    baseUrl,
    output: () => output,
    printed: (text) => printed(text),
    interrupt: () => process.kill(-child.pid!, 'SIGINT'),
    exited,
  };
}

/** SIGKILLs what is left of `sample`'s process group (a test that failed half-way). */
export function killSampleProcess(sample: SampleProcess | undefined): void {
  if (!sample || sample.child.exitCode !== null || sample.child.signalCode !== null) return;
  try {
    process.kill(-sample.child.pid!, 'SIGKILL');
  } catch {
    // already gone
  }
}
