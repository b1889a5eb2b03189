import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';

/** The built command line (`npm run build` makes it; `npm test` builds first). */
export const CLI = fileURLToPath(new URL('../../dist/cli/lock-cli.main.js', import.meta.url));

/** What one run of the command line did. */
export interface CliRun {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
  /** Wall-clock milliseconds from spawn to exit. */
  readonly ms: number;
}

/**
 * Runs `node dist/cli/lock-cli.main.js ...args` as a child process with `env` on top of this process's environment
 * (DATABASE_URL removed unless `env` gives one) and resolves when it exits.
 */
export function runCli(args: readonly string[], env: Record<string, string> = {}): Promise<CliRun> {
  const { DATABASE_URL: _ignored, ...inherited } = process.env;
  const started = Date.now();
  const child = spawn(process.execPath, [CLI, ...args], { env: { ...inherited, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr, ms: Date.now() - started }));
  });
}

/** A TCP port on 127.0.0.1 where nothing listens (bound, then closed). */
export async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
