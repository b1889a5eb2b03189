import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { PoolConnection } from 'mysql2';
import type { InstanceSession, ListenerCallbacks, LockListener } from '../lock.store.js';
import { readOnlyMysqlServer, toMysqlLockError } from './mysql-error.util.js';
import {
  KEEP_SESSION_OPEN,
  SELECT_WAITED_NAMES,
  SELECT_WAITED_NAMES_AND_HANDED,
  SHOW_WSREP_ON,
  TRY_CLAIM_APP_ID,
} from './mysql-lock.queries.sql.js';
import type { MysqlHandOvers } from './mysql-hand-overs.js';
import { CLAIM_LEASE, END_LEASE, RENEW_LEASE, SELECT_LEASE_HOLDER } from './mysql-app-id-lease.queries.sql.js';
import { doorbellTiming, MysqlDoorbell } from './mysql-doorbell.session.js';
import type { MysqlStatementRunner } from './mysql-statement.runner.js';

/**
 * Sessions of `MysqlLockStore` that outlive one statement: the instance lock, on a connection of its own, and the
 * listener, which has a doorbell and polls (MySQL has no LISTEN/NOTIFY).
 * @internal
 */

/** What the claim of an app id needs to know. */
export interface MysqlClaimOptions {
  readonly appId: string;
  /** The instance's name (`locking_instances.instance`). */
  readonly instance: string;
  /** The lease of the claim on a Galera cluster (ms): `leaseMs`. */
  readonly leaseMs: number;
  /** How long a statement on the session may take (ms). */
  readonly queryTimeoutMs: number;
  /** Lease holders of other instances seen renewing (holder → when, monotonic ms): a live twin is not waited for twice. */
  readonly liveHolders: Map<string, number>;
  /** Told whether the server is a node of a Galera cluster, once the claim has asked. */
  readonly onCluster: (galera: boolean) => void;
}

/** How often a claim looks at another holder's lease while it waits for it to run out (ms). */
const LEASE_WATCH_MS = 200;

/** How much later than its lease said another holder's lease may end before it counts as renewed (ms). */
const LEASE_SLACK_MS = 100;

/**
 * Takes the instance lock of the app id (`GET_LOCK`, held by the session); undefined when a twin holds it. On a node
 * of a Galera cluster, where `GET_LOCK` holds on that node only, it also takes the app id's lease (`CLAIM_LEASE`): a
 * twin on another node holds a live lease and is found there; the session's `keep` renews the lease.
 */
export async function openMysqlInstanceSession(
  connection: PoolConnection,
  runner: MysqlStatementRunner,
  options: MysqlClaimOptions,
): Promise<InstanceSession | undefined> {
  const { appId } = options;
  let alive = true;
  let open = true;
  // Stays attached after the end: a broken connection may still emit 'error' while it is destroyed.
  connection.on('error', () => {
    alive = false;
  });
  connection.on('end', () => {
    alive = false;
  });
  let pid: number;
  let lease: string | undefined;
  try {
    const session = runner.transactionOn(connection);
    const [claimed] = await session.select<{ claimed: number | string | null; pid: number | string; read_only: string | null }>(
      TRY_CLAIM_APP_ID,
      [appId],
    );
    if (claimed?.read_only) throw readOnlyMysqlServer(claimed.read_only);
    if (Number(claimed?.claimed) !== 1) {
      connection.destroy();
      return undefined;
    }
    pid = Number(claimed?.pid);
    // The session idles between the rare statements the hot path lends it: the server's wait_timeout (minutes on many
    // managed servers) must not end it and free the app id under a live instance.
    await session.write(KEEP_SESSION_OPEN);
    const [wsrep] = await session.select<{ Value?: string }>(SHOW_WSREP_ON);
    const galera = String(wsrep?.Value).toUpperCase() === 'ON';
    options.onCluster(galera);
    if (galera) {
      lease = randomBytes(16).toString('hex');
      if (!(await claimLease(runner, options, lease))) {
        connection.destroy();
        return undefined;
      }
    }
  } catch (error) {
    connection.destroy();
    throw toMysqlLockError(error, 'claimAppId', false);
  }
  const end = () => {
    alive = false;
    if (!open) return;
    open = false;
    connection.destroy(); // closing the session frees its GET_LOCK
  };
  return {
    get alive() {
      return alive;
    },
    pid,
    close() {
      if (lease === undefined || !open) return end();
      // The lease given up first, on the session itself (the pool may be closing): a successor on another node need
      // not wait for it to run out. Bounded: a session that does not answer is destroyed anyway.
      alive = false;
      const timer = setTimeout(end, options.queryTimeoutMs);
      connection.query({ sql: runner.sql(END_LEASE), values: [appId, lease] }, () => {
        clearTimeout(timer);
        end();
      });
    },
    ...(lease === undefined
      ? {}
      : {
          async keep() {
            const { affectedRows } = await runner.write('claimAppId', RENEW_LEASE, [options.leaseMs, appId, lease]);
            if (affectedRows === 0) end(); // another instance took the app id: this one holds nothing now
          },
        }),
  };
}

/** A row of `SELECT_LEASE_HOLDER`. */
interface LeaseRow {
  lease_holder: string | null;
  left_ms: number | string | null;
}

/**
 * Takes the app id's lease for `holder`; whether it has it. Another holder's live lease is waited for, once, as long
 * as it has left (at most `leaseMs`): the lease of a process that is gone (killed, its machine lost) runs out, and the
 * claim then takes it; a holder that lives renews it meanwhile (every renewal tick), and the claim gives up at once.
 */
async function claimLease(runner: MysqlStatementRunner, options: MysqlClaimOptions, holder: string): Promise<boolean> {
  const { appId, instance, leaseMs, liveHolders } = options;
  const claim = () =>
    runner.transaction('claimAppId', false, async (tx) => {
      await tx.write(CLAIM_LEASE, [appId, instance, holder, leaseMs]);
      const [row] = await tx.select<LeaseRow>(SELECT_LEASE_HOLDER, [appId]);
      return row;
    });
  const row = await claim();
  const other = row?.lease_holder;
  if (other === holder) return true;
  if (!other || (performance.now() - (liveHolders.get(other) ?? -Infinity) < leaseMs)) return false;
  if (!(await leaseRunsOut(runner, appId, other, Number(row?.left_ms ?? 0), leaseMs))) {
    liveHolders.set(other, performance.now());
    return false;
  }
  return (await claim())?.lease_holder === holder;
}

/** Whether `holder`'s lease, `leftMs` from its end, runs out without being renewed (watched up to `leaseMs`). */
async function leaseRunsOut(runner: MysqlStatementRunner, appId: string, holder: string, leftMs: number, leaseMs: number): Promise<boolean> {
  let end = performance.now() + leftMs;
  const deadline = performance.now() + Math.min(leftMs, leaseMs) + LEASE_SLACK_MS;
  while (performance.now() < deadline) {
    await sleep(Math.min(LEASE_WATCH_MS, Math.max(0, end - performance.now()) + 10));
    const [row] = await runner.select<LeaseRow>('claimAppId', SELECT_LEASE_HOLDER, [appId]);
    if (!row?.lease_holder || Number(row.left_ms) <= 0) return true;
    if (row.lease_holder !== holder) return false;
    const seenEnd = performance.now() + Number(row.left_ms);
    if (seenEnd > end + LEASE_SLACK_MS) return false; // renewed: its holder lives
    end = seenEnd;
  }
  return false;
}

/** Polling interval of the listener while this app has waiters (ms): the fallback of the doorbells. */
export const POLL_BUSY_MS = 20;

/** Polling intervals of the listener (internal knobs: the tests lengthen them to see the doorbell alone). @internal */
export const pollTiming = {
  /** While this app has waiters (ms). @default POLL_BUSY_MS */
  busyMs: POLL_BUSY_MS,
  /** While it has none (ms). @default 250 */
  idleMs: 250,
};

/**
 * A listener without LISTEN/NOTIFY, three ways.
 * - Within this process, the store reports the names freed by its own releases, reaps and recoveries at once
 *   (`MysqlWakeups`).
 * - Across processes, while this app has waiters, its doorbell (`MysqlDoorbell`) sleeps in the server; a release by
 *   another instance of a name they wait for interrupts that sleep, and the listener polls at once.
 * - And it polls every `pollTiming.busyMs` while this app has waiters (`idleMs` otherwise), which covers a ring that
 *   was lost: for each name they wait for, how many lock rows hold it. A name held by fewer rows than at the previous
 *   poll was freed, and so may be a name seen for the first time. A name freed and taken again between two polls is
 *   missed: the waiters' own re-check timer covers that case.
 * Where releases hand grants over (`mysql-lock-hand-over.sql.ts`), a grant handed to a waiter of this process is
 * reported (`handedOver`) at once by a release of this process, and otherwise found by the poll, which reads the
 * waiters' rows marked `granted` too (each poll reports them, until the grant's release removes them: a waiter that
 * took its grant has stopped listening). A ring is then answered after the poll it brings on: when that poll finds a
 * grant newly handed to a waiter here, the ring was for it (a write handed over rings that waiter's doorbell alone),
 * and only the names whose counts dropped are reported freed, so that the other waiters do not all wake to be refused.
 * A failed poll is reported as `lost` (waiters re-check, and the notifications service opens a new listener).
 */
export function openMysqlListener(
  runner: MysqlStatementRunner,
  appId: string,
  wakeups: MysqlWakeups,
  callbacks: ListenerCallbacks,
  queryTimeoutMs: number,
  handOvers: MysqlHandOvers,
): LockListener {
  let open = true;
  let timer: NodeJS.Timeout | undefined;
  let immediate: NodeJS.Immediate | undefined;
  let polling = false;
  let soon = false;
  let rungDuringPoll = false;
  let ringPolled = false;
  let rungNames = new Set<string>();
  let waitersSeenAt = 0;
  let held = new Map<string, number>();
  /** The grants handed to waiters here at the last poll, and whether that poll could see them. */
  let handed = new Set<number>();
  let seesHandOvers = false;
  /** A ring whose names are reported after the poll it brings on (see above). */
  let rungUnreported = false;
  const unsubscribeNames = wakeups.subscribe((names) => callbacks.freed(names));
  const unsubscribeHandOvers = wakeups.subscribeHandOvers(callbacks.handedOver);
  const unsubscribe = () => {
    unsubscribeNames();
    unsubscribeHandOvers();
  };
  // Rung: a release of another instance freed names these waiters wait for (which ones, the ring does not say). The
  // names they waited for at the last poll are reported at once (counts could not tell: a name may have been freed
  // and taken again since that poll), and the poll it brings on reports the names waited for since (a spurious wake
  // costs one attempt; a ring during a poll is answered after it).
  const ring = () => {
    rungNames = new Set(held.keys());
    rungUnreported = seesHandOvers;
    if (!rungUnreported && rungNames.size > 0) callbacks.freed([...rungNames]);
    ringPolled = true;
    schedule(0);
  };
  const doorbell = new MysqlDoorbell(runner, appId, queryTimeoutMs, () => {
    if (!open) return;
    if (polling) rungDuringPoll = true;
    else ring();
  });
  const close = () => {
    open = false;
    clearTimeout(timer);
    clearImmediate(immediate);
    unsubscribe();
    doorbell.close();
    wakeups.onWaiterRegistered = () => undefined;
  };
  // One poll at a time: the next is scheduled when one ends.
  const schedule = (delayMs: number) => {
    clearTimeout(timer);
    clearImmediate(immediate);
    immediate = undefined;
    // At once after a ring: a timer of 0 ms waits 1 ms in Node.js, as long as the rest of a hand-over to this process.
    if (delayMs === 0) immediate = setImmediate(() => void poll());
    else {
      timer = setTimeout(() => void poll(), delayMs);
      timer.unref();
    }
  };
  const poll = async () => {
    if (!open) return;
    polling = true;
    soon = false;
    rungDuringPoll = false;
    const afterRing = ringPolled;
    ringPolled = false;
    const reportRung = afterRing && rungUnreported;
    rungUnreported = false;
    let rows: { name: string; held: number | string; waiter?: string | null; granted?: number | string | null }[];
    try {
      const withHanded = await handOvers.with(() => runner.select<(typeof rows)[number]>('listen', SELECT_WAITED_NAMES_AND_HANDED, [appId, appId]));
      seesHandOvers = withHanded !== undefined;
      rows = withHanded ?? (await runner.select('listen', SELECT_WAITED_NAMES, [appId]));
    } catch {
      if (!open) return;
      close();
      callbacks.lost();
      return;
    } finally {
      polling = false;
    }
    if (!open) return;
    const handedNow = new Set<number>();
    for (const row of rows) {
      if (typeof row.waiter !== 'string') continue;
      const stamp = Number(row.granted);
      handedNow.add(stamp);
      callbacks.handedOver(row.waiter, stamp, 0);
    }
    const newlyHanded = [...handedNow].some((stamp) => !handed.has(stamp));
    handed = handedNow;
    const now = new Map(rows.filter((row) => typeof row.waiter !== 'string').map((row) => [row.name, Number(row.held)]));
    // A name seen for the first time counts as freed: its waiter may have tried before a release that committed
    // before this poll (a spurious wake costs one attempt; a missed one would cost the re-check interval). So does a
    // name held by nobody: waiters queue in order, and a wake the earliest one missed (a ring lost while its doorbell
    // was re-armed) would leave the name free, every later request yielding, until its re-check.
    const freed = [...now]
      .filter(
        ([name, count]) =>
          (afterRing && !rungNames.has(name)) || !held.has(name) || count === 0 || count < (held.get(name) ?? 0),
      )
      .map(([name]) => name);
    // A ring for no grant handed here: every name waited for at the ring may have been freed (and taken again since).
    if (reportRung && !newlyHanded) freed.push(...[...rungNames].filter((name) => !freed.includes(name)));
    held = now;
    if (freed.length > 0) callbacks.freed(freed);
    if (now.size > 0) {
      waitersSeenAt = performance.now();
      doorbell.open(); // (again, after a lost one)
    } else if (performance.now() - waitersSeenAt >= doorbellTiming.lingerMs) doorbell.close();
    if (rungDuringPoll) ring();
    else schedule(now.size > 0 || soon ? pollTiming.busyMs : pollTiming.idleMs);
  };
  schedule(0);
  wakeups.onWaiterRegistered = () => {
    // A new waiter: its doorbell, and a poll soon, whatever the interval was (after the poll in flight, if one is).
    if (!open) return;
    waitersSeenAt = performance.now();
    doorbell.open();
    if (polling) soon = true;
    else if (held.size === 0) schedule(pollTiming.busyMs);
  };
  return { close };
}

/** The names freed by this process's own statements, reported to its listener without a round trip. @internal */
export class MysqlWakeups {
  private readonly listeners = new Set<(names: readonly string[]) => void>();
  private readonly handOvers = new Set<ListenerCallbacks['handedOver']>();
  /** Set by the open listener: a waiter just registered. */
  onWaiterRegistered: () => void = () => undefined;

  subscribe(listener: (names: readonly string[]) => void): () => void {
    this.listeners.add(listener);
    return () => void this.listeners.delete(listener);
  }

  freed(names: readonly string[]): void {
    if (names.length === 0) return;
    for (const listener of this.listeners) listener(names);
  }

  /** Hears the grants this process's releases hand to its own waiters. */
  subscribeHandOvers(listener: ListenerCallbacks['handedOver']): () => void {
    this.handOvers.add(listener);
    return () => void this.handOvers.delete(listener);
  }

  /** A release of this process handed `stamp` to its waiter `waiter` (committed). */
  handedOver(waiter: string, stamp: number, rowsEndMs: number): void {
    for (const listener of this.handOvers) listener(waiter, stamp, rowsEndMs);
  }
}
