import type { Incarnation, SoakEvent } from './soak-workers.js';

/** What the database holds at the end of a soak, read by the test. */
export interface SoakDatabaseState {
  /** Sum of `soak_counter.n`. */
  readonly counter: number;
  /** `soak_ledger`: one row per fenced write that committed. */
  readonly ledger: ReadonlyArray<{ id: string; name: string; token: number; prev_token: number }>;
  /** The final status of each grant's log row, by stamp. */
  readonly statusOf: ReadonlyMap<number, string>;
  /** The stamps whose log row records a business done (markBusinessDone fenced a live grant). */
  readonly businessDone: ReadonlySet<number>;
  /** Lock and waiter rows of the soak's app ids left after every worker closed. */
  readonly leftLocks: number;
  readonly leftWaiters: number;
}

/** The soak's verdict: its breaches (empty when it passed) and its figures. */
export interface SoakVerdict {
  readonly overlaps: string[];
  readonly tokens: string[];
  readonly fenced: string[];
  readonly untold: string[];
  readonly untyped: string[];
  readonly figures: Record<string, number>;
}

const ofKind = (incarnation: Incarnation, kind: string) => incarnation.events.filter((e) => e.event === kind);
const stampOf = (e: SoakEvent) => Number(e.stamp);

/**
 * Judges a soak from the holders' side. `crashes` are the parent's hrtime (ms) of each immediate restart (a crash):
 * an acknowledged release may be undone by one within its last fraction of a second (docs/faults.md, asyncRelease).
 */
export function judgeSoak(incarnations: readonly Incarnation[], db: SoakDatabaseState, crashes: readonly number[]): SoakVerdict {
  const overlaps: string[] = [];
  const tokens: string[] = [];
  // No overlap: per name, the intervals each holder proved itself holding, on one clock, never meet.
  const holds = incarnations.flatMap((i) =>
    ofKind(i, 'hold').map((e) => ({ appId: i.appId, name: String(e.name), stamp: stampOf(e), from: Number(e.from), to: Number(e.to) })),
  );
  const byName = new Map<string, typeof holds>();
  for (const hold of holds) byName.set(hold.name, [...(byName.get(hold.name) ?? []), hold]);
  for (const [name, list] of byName) {
    list.sort((a, b) => a.from - b.from);
    let last: (typeof list)[number] | undefined; // the hold that reached furthest so far
    let previous: (typeof list)[number] | undefined;
    for (const hold of list) {
      if (last && hold.from <= last.to) {
        overlaps.push(`${name}: ${hold.appId} (stamp ${hold.stamp}) from ${hold.from} while ${last.appId} (stamp ${last.stamp}) held it to ${last.to}`);
      }
      if (previous && hold.stamp <= previous.stamp) tokens.push(`${name}: stamp ${hold.stamp} held after stamp ${previous.stamp}`);
      previous = hold;
      if (!last || hold.to > last.to) last = hold;
    }
  }
  for (const row of db.ledger) {
    if (!(Number(row.token) > Number(row.prev_token))) tokens.push(`${row.name}: fenced write ${row.id} with token ${row.token} after ${row.prev_token}`);
  }

  // Fenced writes exact: one counter step per ledger row; every acknowledged commit is there, nothing else but
  // commits whose answer never came.
  const fenced: string[] = [];
  const acked = new Set(incarnations.flatMap((i) => ofKind(i, 'commit').map((e) => String(e.id))));
  const sent = new Set(incarnations.flatMap((i) => ofKind(i, 'committing').map((e) => String(e.id))));
  const inLedger = new Set(db.ledger.map((row) => row.id));
  if (db.counter !== db.ledger.length) fenced.push(`counter ${db.counter} != ${db.ledger.length} fenced writes in the ledger`);
  for (const id of acked) if (!inLedger.has(id)) fenced.push(`acknowledged commit ${id} is missing`);
  for (const id of inLedger) if (!sent.has(id)) fenced.push(`${id} committed without its holder committing it`);
  // Nothing a lost holder wrote: every committed write was fenced by a grant that was live at its business done.
  for (const row of db.ledger) if (!db.businessDone.has(row.token)) fenced.push(`${row.id} committed under stamp ${row.token}, never marked business done`);

  // Every ended grant's holder told: a grant that did not end by its holder's release fired its signal first.
  const untold: string[] = [];
  let undone = 0;
  for (const incarnation of incarnations) {
    if (incarnation.killed) continue;
    const signalled = new Set(ofKind(incarnation, 'signal').map(stampOf));
    const events = incarnation.events;
    for (const grant of ofKind(incarnation, 'grant')) {
      const stamp = stampOf(grant);
      const status = db.statusOf.get(stamp);
      if (status === 'RELEASED' || signalled.has(stamp)) continue;
      const released = events.find((e) => e.event === 'released' && stampOf(e) === stamp);
      const releaseFailed = events.find((e) => e.event === 'error' && e.op === 'releaseLocks' && stampOf(e) === stamp);
      if (released && crashes.some((at) => at >= Number(released.at) && at - Number(released.at) < 2000)) {
        undone++; // an acknowledged release undone by the crash right after it: reaped after its lease
        continue;
      }
      if (releaseFailed?.name === 'LockStoreError') continue; // its holder was told that the release failed
      untold.push(`${incarnation.appId} stamp ${stamp}: ended ${status ?? 'with no log row'} untold`);
    }
  }

  const errors = incarnations.flatMap((i) => ofKind(i, 'error'));
  const untyped = errors.filter((e) => e.typed !== true).map((e) => `${e.op}: ${e.name} ${e.message}`);
  const figures: Record<string, number> = {
    grants: incarnations.reduce((n, i) => n + ofKind(i, 'grant').length, 0),
    holds: holds.length,
    fencedCommits: acked.size,
    fencedUnknown: [...sent].filter((id) => !acked.has(id)).length,
    fencedUnknownLanded: [...inLedger].filter((id) => !acked.has(id)).length,
    signals: incarnations.reduce((n, i) => n + ofKind(i, 'signal').length, 0),
    releasesUndoneByCrash: undone,
    acquireErrors: errors.filter((e) => e.op === 'tryLocks').length,
    waitsEndedByStoreErrorBeforeDeadline: errors.filter((e) => e.op === 'tryLocks' && e.name === 'LockStoreError' && Number(e.waitedMs) < 1400).length,
    releaseErrors: errors.filter((e) => e.op === 'releaseLocks').length,
    startFailures: incarnations.filter((i) => i.events.some((e) => e.event === 'start-failed')).length,
    unexpectedExits: incarnations.filter(
      (i) => !i.killed && i.exit !== undefined && i.exit !== '0' && !i.events.some((e) => e.event === 'start-failed' || e.event === 'closing'),
    ).length,
    leftLocks: db.leftLocks,
    leftWaiters: db.leftWaiters,
  };
  return { overlaps, tokens, fenced, untold, untyped, figures };
}
