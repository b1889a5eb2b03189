import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const SCRIPT = fileURLToPath(new URL('./holder.child.mjs', import.meta.url));

/** A lock holder running in a child process (test/support/holder.child.mjs). */
export interface HolderProcess {
  readonly child: ChildProcess;
  /** Resolves with the next event of the given name the child reports. */
  next(event: string): Promise<Record<string, unknown>>;
  /** Writes a line to the child's stdin. */
  send(line: string): void;
  /** SIGKILLs the child and waits for it to exit. */
  kill(): Promise<void>;
}

/** Starts a holder child process (or another child `script` of this folder); `env` is added to this process's
 * environment. */
export function startHolder(env: Record<string, string>, script = SCRIPT): HolderProcess {
  const child = spawn(process.execPath, [script], {
    env: { ...process.env, ...env },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const seen: Record<string, unknown>[] = [];
  const waiting: Array<{ event: string; resolve: (e: Record<string, unknown>) => void }> = [];
  createInterface({ input: child.stdout! }).on('line', (line) => {
    const parsed = JSON.parse(line) as Record<string, unknown>;
    const waiter = waiting.findIndex((w) => w.event === parsed.event);
    if (waiter >= 0) waiting.splice(waiter, 1)[0]!.resolve(parsed);
    else seen.push(parsed);
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    child,
    next: (event) =>
      new Promise((resolve, reject) => {
        const index = seen.findIndex((e) => e.event === event);
        if (index >= 0) return resolve(seen.splice(index, 1)[0]!);
        const timer = setTimeout(() => reject(new Error(`holder never reported ${event}`)), 20_000);
        waiting.push({ event, resolve: (e) => (clearTimeout(timer), resolve(e)) });
      }),
    send: (line) => child.stdin!.write(`${line}\n`),
    kill: async () => {
      child.kill('SIGKILL');
      await exited;
    },
  };
}
