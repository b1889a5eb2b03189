import type { LeaderService } from 'nestjs-db-locks';
import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';

const REPLICA = fileURLToPath(new URL('./leader-replica.child.mjs', import.meta.url));

/** The machine's monotonic clock in ms, as the replicas report it (`process.hrtime`: one clock for every process). */
export const monotonicNow = (): number => Number(process.hrtime.bigint()) / 1e6;

/** What a replica reported (or, `killed`, what the spec did to it), with the time. */
export interface FleetEvent {
  readonly app: string;
  readonly event: 'ready' | 'start' | 'stop' | 'finished' | 'beat' | 'resigned' | 'log' | 'killed' | 'exited';
  readonly t: number;
  readonly token?: number;
  readonly reason?: string;
  readonly level?: string;
  readonly message?: string;
}

/**
 * Replica processes (test/support/leader-replica.child.mjs) that stand for one role, and everything they report, in
 * one list: the spec counts from it how many replicas believed they led at each instant.
 */
export class LeaderFleet {
  readonly events: FleetEvent[] = [];
  private readonly children = new Map<string, { child: ChildProcess; exited: Promise<void> }>();

  constructor(private readonly env: Record<string, string>) {}

  /** Starts replica `app` and resolves once its application has started. */
  async start(app: string, env: Record<string, string> = {}): Promise<void> {
    const child = spawn(process.execPath, [REPLICA], {
      env: { ...process.env, ...this.env, ...env, APP_ID: app },
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    createInterface({ input: child.stdout! }).on('line', (line) => {
      this.events.push({ ...(JSON.parse(line) as Omit<FleetEvent, 'app'>), app });
    });
    const exited = new Promise<void>((resolve) =>
      child.once('exit', () => {
        this.events.push({ app, event: 'exited', t: monotonicNow() });
        resolve();
      }),
    );
    this.children.set(app, { child, exited });
    await this.next((e) => e.app === app && (e.event === 'ready' || e.event === 'exited'), 30_000);
  }

  /** The first event from index `from` on that matches, once it is there. */
  async next(match: (event: FleetEvent) => boolean, timeoutMs = 20_000, from = 0): Promise<FleetEvent> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.events.slice(from).find(match);
      if (found) return found;
      if (Date.now() > deadline) throw new Error(`no such event within ${timeoutMs} ms: ${JSON.stringify(this.events.slice(-8))}`);
      await sleep(5);
    }
  }

  /** The replica that leads now according to its reports (a start not yet followed by a stop or its death). */
  leader(): string | undefined {
    return leadersAfter(this.events).at(-1)?.leaders[0];
  }

  /** Writes `line` to replica `app`'s stdin. */
  send(app: string, line: string): void {
    this.children.get(app)!.child.stdin!.write(`${line}\n`);
  }

  /** SIGTERM (graceful: `app.close()`), and waits for the process to end. */
  async terminate(app: string): Promise<void> {
    const { child, exited } = this.children.get(app)!;
    child.kill('SIGTERM');
    await exited;
  }

  /** SIGKILL, recording the instant as `killed`, and waits for the process to end. */
  async kill(app: string): Promise<number> {
    const { child, exited } = this.children.get(app)!;
    const t = monotonicNow();
    this.events.push({ app, event: 'killed', t });
    child.kill('SIGKILL');
    await exited;
    return t;
  }

  /** Sends `signal` (SIGSTOP, SIGCONT) to replica `app`. */
  signal(app: string, signal: NodeJS.Signals): void {
    this.children.get(app)!.child.kill(signal);
  }

  /** SIGKILLs every replica still running. */
  async closeAll(): Promise<void> {
    for (const { child, exited } of this.children.values()) {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    }
  }
}

/**
 * The replicas that believed they led after each event, in time order: a replica believes it leads from its `start`
 * to its `stop` (its signal fired), its death (`killed`, `exited`) or its `finished`.
 */
export function leadersAfter(events: readonly FleetEvent[]): Array<{ event: FleetEvent; leaders: string[] }> {
  const leading = new Set<string>();
  const timeline: Array<{ event: FleetEvent; leaders: string[] }> = [];
  for (const event of [...events].sort((a, b) => a.t - b.t)) {
    if (event.event === 'start') leading.add(event.app);
    else if (['stop', 'killed', 'exited', 'finished'].includes(event.event)) leading.delete(event.app);
    else continue;
    timeline.push({ event, leaders: [...leading] });
  }
  return timeline;
}

/** The value at quantile `q` (0..1) of `values`. */
export function quantile(values: readonly number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
}

/**
 * The heartbeats (`beat`: the replica believed it led at that instant) of a replica after another replica had been
 * elected since that replica's own last election: each one is an instant at which two replicas believed they led.
 */
export function beatsOfDeposedLeaders(events: readonly FleetEvent[]): FleetEvent[] {
  const sorted = [...events].sort((a, b) => a.t - b.t);
  let latest: FleetEvent | undefined;
  const found: FleetEvent[] = [];
  for (const event of sorted) {
    if (event.event === 'start') {
      latest = event;
    } else if (event.event === 'beat' && latest !== undefined && latest.app !== event.app) found.push(event);
  }
  return found;
}

/** What one replica of an in-process fleet was told about a role, with the time (`performance.now()`). */
export interface ToldChange {
  /** The replica's index. */
  readonly app: number;
  readonly leading: boolean;
  readonly token: number;
  readonly t: number;
}

/** Records, in order, every change of leadership of `role` that each of `services` tells. */
export function recordChanges(services: readonly LeaderService[], role: string): ToldChange[] {
  const told: ToldChange[] = [];
  services.forEach((service, app) =>
    service.changes(role).subscribe((change) => told.push({ app, leading: change.leading, token: change.term.token, t: performance.now() })),
  );
  return told;
}

/** The most replicas that believed at once that they led, from what they were told in order. */
export function mostLeadersAtOnce(told: readonly ToldChange[]): number {
  let leading = 0;
  let most = 0;
  for (const change of told) {
    leading += change.leading ? 1 : -1;
    most = Math.max(most, leading);
  }
  return most;
}

/** A leader's work that lasts until its signal fires. */
export const leadUntilTold = (signal: AbortSignal): Promise<void> =>
  new Promise((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));

/**
 * `services` stand for `role` with `leadUntilTold` as the work: the first one, until it leads, then the others (they
 * queue in that order). Returns what each was told (`recordChanges`) and how to stand again (replica `i`).
 */
export async function standInOrder(
  services: readonly LeaderService[],
  role: string,
): Promise<{ told: ToldChange[]; stand: (i: number) => void }> {
  const told = recordChanges(services, role);
  const stand = (i: number) => services[i]!.campaign(role, leadUntilTold);
  stand(0);
  const deadline = Date.now() + 20_000;
  while (!services[0]!.isLeader(role)) {
    if (Date.now() > deadline) throw new Error(`replica 0 was not elected for ${role} within 20 s`);
    await sleep(10);
  }
  for (let i = 1; i < services.length; i++) stand(i);
  return { told, stand };
}
