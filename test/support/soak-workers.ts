import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';

const SCRIPT = fileURLToPath(new URL('./soak-worker.child.mjs', import.meta.url));

/** One event a soak worker reported (see soak-worker.child.mjs). */
export type SoakEvent = Record<string, unknown> & { event: string };

/** A moment on both clocks of the machine: `hr` is `process.hrtime` in ms (the workers' clock), `wall` is `Date.now()`. */
export interface Moment {
  readonly hr: number;
  readonly wall: number;
}

/** One process of a soak worker: its `appId`, and what it reported until it exited. */
export interface Incarnation {
  readonly appId: string;
  readonly child: ChildProcess;
  /** Its process id (the end of the `instance` of its log rows: `host:pid`). */
  readonly pid: number;
  /** When it was spawned, and when it exited. */
  readonly spawned: Moment;
  exited?: Moment;
  readonly events: SoakEvent[];
  /** The test killed it (kill -9): what it held is not judged from its side. */
  killed: boolean;
  /** When the test killed it (just before the SIGKILL). */
  killedAt?: Moment;
  /** When the test stopped it (SIGSTOP) and let it go on (SIGCONT). */
  readonly pauses: Array<{ from: Moment; to?: Moment }>;
  /** Its exit code (or signal), once it exited. */
  exit?: string;
}

const moment = (): Moment => ({ hr: Number(process.hrtime.bigint()) / 1e6, wall: Date.now() });

/** The soak's workers: one process per `appId`, respawned whenever one exits while the soak runs. */
export interface SoakWorkers {
  /** Every process started, in order. */
  readonly incarnations: readonly Incarnation[];
  /** The live process of each `appId` (started and not stopped), or undefined while it starts again. */
  live(appId: string): Incarnation | undefined;
  /** The app ids whose live process holds a grant now (it reported a grant and no release call after it). */
  holding(): string[];
  /** Kill -9 of `appId`'s process; it is started again at once. */
  kill(appId: string): Promise<void>;
  /** SIGSTOP of `incarnation` for `ms`, then SIGCONT; recorded in its `pauses`. */
  pause(incarnation: Incarnation, ms: number): Promise<void>;
  /** Asks every worker to stop (it ends its loop, releases and closes its app); resolves with each close's ms. */
  stop(timeoutMs: number): Promise<{ closeMs: number[]; hung: string[] }>;
}

/** Resolves when `child` exited. */
const exited = (child: ChildProcess) =>
  child.exitCode !== null || child.signalCode !== null
    ? Promise.resolve()
    : new Promise<void>((resolve) => child.once('exit', () => resolve()));

/** Starts one worker process per `appIds` entry with `env`, and keeps one running per `appId` until `stop`. */
export function startSoakWorkers(appIds: readonly string[], env: Record<string, string>): SoakWorkers {
  const incarnations: Incarnation[] = [];
  const current = new Map<string, Incarnation>();
  let stopping = false;
  const launch = (appId: string): void => {
    const child = spawn(process.execPath, [SCRIPT], {
      env: { ...process.env, ...env, APP_ID: appId },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const incarnation: Incarnation = { appId, child, pid: child.pid ?? 0, spawned: moment(), events: [], killed: false, pauses: [] };
    incarnations.push(incarnation);
    current.set(appId, incarnation);
    child.stdin!.on('error', () => undefined);
    child.stderr!.resume(); // the worker logs nothing on purpose; a crash's trace is not needed here
    createInterface({ input: child.stdout! }).on('line', (line) => {
      try {
        incarnation.events.push(JSON.parse(line) as SoakEvent);
      } catch {
        incarnation.events.push({ event: 'garbage', line });
      }
    });
    child.once('exit', (code, signal) => {
      incarnation.exited = moment();
      incarnation.exit = signal ?? String(code);
      if (current.get(appId) === incarnation) current.delete(appId);
      // Started again unless the soak is stopping or the test kills it (the test then starts it itself).
      if (!stopping && !incarnation.killed) setTimeout(() => !stopping && !current.has(appId) && launch(appId), 300);
    });
  };
  for (const appId of appIds) launch(appId);
  return {
    incarnations,
    live(appId) {
      const incarnation = current.get(appId);
      return incarnation?.events.some((e) => e.event === 'started') ? incarnation : undefined;
    },
    holding() {
      // A grant whose release was not called yet (a worker may run several callers, each with its own grant).
      return [...current.values()]
        .filter((i) => {
          const open = new Set<unknown>();
          for (const e of i.events) {
            if (e.event === 'grant') open.add(e.stamp);
            else if (e.event === 'release-call') open.delete(e.stamp);
          }
          return open.size > 0;
        })
        .map((i) => i.appId);
    },
    async kill(appId) {
      const incarnation = current.get(appId);
      if (!incarnation) return;
      incarnation.killed = true;
      incarnation.killedAt = moment();
      incarnation.child.kill('SIGKILL');
      await exited(incarnation.child);
      if (!stopping) launch(appId);
    },
    async pause(incarnation, ms) {
      const pause: Incarnation['pauses'][number] = { from: moment() };
      incarnation.pauses.push(pause);
      incarnation.child.kill('SIGSTOP');
      await sleep(ms);
      incarnation.child.kill('SIGCONT');
      pause.to = moment();
    },
    async stop(timeoutMs) {
      stopping = true;
      const closeMs: number[] = [];
      const hung: string[] = [];
      await Promise.all(
        [...current.values()].map(async (incarnation) => {
          incarnation.child.kill('SIGCONT');
          incarnation.child.stdin!.write('stop\n');
          const done = await Promise.race([exited(incarnation.child).then(() => true), sleep(timeoutMs, false)]);
          if (!done) {
            const closing = incarnation.events.some((e) => e.event === 'closing');
            const stall = incarnation.events.findLast((e) => e.event === 'close-stall');
            const where = stall ? `: ${JSON.stringify({ ...stall, event: undefined })}` : '';
            const closed = incarnation.events.some((e) => e.event === 'closed');
            const phase = closed ? 'after app.close() returned: its process did not exit' : `in app.close()${where}`;
            hung.push(`${incarnation.appId} (${closing ? phase : 'before app.close(): its last call never returned'})`);
            incarnation.child.kill('SIGKILL');
            await exited(incarnation.child);
          }
          const closed = incarnation.events.find((e) => e.event === 'closed');
          if (closed) closeMs.push(Number(closed.ms));
        }),
      );
      // A worker between two processes (started again after an exit) is not in `current`: wait for the last ones.
      await Promise.all(incarnations.map((i) => exited(i.child)));
      return { closeMs, hung };
    },
  };
}
