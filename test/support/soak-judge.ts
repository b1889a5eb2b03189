import type { Incarnation, Moment, SoakEvent } from './soak-workers.js';

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
  /**
   * Every grant of the soak's app ids (`locking_log`), its times as epoch ms on the database's clock (the machine's
   * wall clock, as `Date.now()`); `ended` is null while it did not end.
   */
  readonly grants: ReadonlyArray<{ stamp: number; appId: string; instance: string; status: string; acquired: number; ended: number | null }>;
  /** Lock and waiter rows of the soak's app ids left after every worker closed. */
  readonly leftLocks: number;
  readonly leftWaiters: number;
  /** Those rows: their table, and their columns. */
  readonly leftRows: ReadonlyArray<{ table: string; row: Record<string, unknown> }>;
}

/** One fault the soak made: its kind, the worker it struck (a kill, a pause), and when. */
export interface SoakFaultMoment {
  readonly kind: string;
  readonly target?: string;
  readonly from: Moment;
  readonly to: Moment;
}

/** How a soak is judged beyond the holders' breaches (see `judgeSoak`). */
export interface SoakJudgeOptions {
  /** The faults made, to name the one nearest a breach. */
  readonly timeline?: readonly SoakFaultMoment[];
  /**
   * A grant that no caller received (no worker reported its stamp) must have ended within this many ms of its
   * `acquired` (database times): a grant left to a waiter that is gone is freed within this bound. Not judged without it.
   */
  readonly unreceivedBoundMs?: number;
  /**
   * The bound instead for a grant whose process was killed, or stopped (SIGSTOP), within `nearFaultMs` of its
   * `acquired`: its own statement's answer may have been on its way (or not yet reported) when it was struck, so no
   * caller could receive it, and it is an ordinary grant of a process gone, freed within its lease (lease + reaper
   * interval + slack).
   */
  readonly unreceivedNearFaultBoundMs?: number;
  /** See `unreceivedNearFaultBoundMs` (100 ms by default). */
  readonly nearFaultMs?: number;
  /**
   * How late past its deadline (`waitMs`) and the 5 s that a wait may go on to resolve a lost answer (`tryLocks`:
   * "throws them only when an attempt's answer was lost and the database did not answer within 5 s past the
   * deadline") a call may be answered, the time its process was stopped left out (3000 ms by default).
   */
  readonly answerSlackMs?: number;
}

/** The soak's verdict: its breaches (empty when it passed) and its figures. */
export interface SoakVerdict {
  readonly overlaps: string[];
  readonly tokens: string[];
  readonly fenced: string[];
  readonly untold: string[];
  readonly untyped: string[];
  /** Calls of a live worker not answered (in time, or before its close), or answered 0 before their deadline. */
  readonly unanswered: string[];
  /** Grants no caller received that outlived their bound (only with `unreceivedBoundMs`). */
  readonly unreceived: string[];
  /** The lock and waiter rows left after shutdown (see `SoakDatabaseState.leftRows`). */
  readonly leftRows: readonly string[];
  readonly figures: Record<string, number>;
}

/** How long past a wait's deadline `tryLocks` may go on resolving an attempt whose answer was lost. */
const RESOLVE_GRACE_MS = 5000;

const ofKind = (incarnation: Incarnation, kind: string) => incarnation.events.filter((e) => e.event === kind);
const stampOf = (e: SoakEvent) => Number(e.stamp);

/**
 * Judges a soak from the holders' side. `crashes` are the parent's hrtime (ms) of each immediate restart (a crash):
 * an acknowledged release may be undone by one within its last fraction of a second (docs/faults.md, asyncRelease).
 * Also every waiter answered (`unanswered`, see `judgeAnswers`) and, with `options.unreceivedBoundMs`, no grant left
 * to a waiter that is gone beyond it (`unreceived`, see `judgeUnreceived`).
 */
export function judgeSoak(
  incarnations: readonly Incarnation[],
  db: SoakDatabaseState,
  crashes: readonly number[],
  options: SoakJudgeOptions = {},
): SoakVerdict {
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
        overlaps.push(
          `${name}: ${hold.appId} (stamp ${hold.stamp}) from ${hold.from} while ${last.appId} (stamp ${last.stamp}) held it to ${last.to}` +
            ` [${grantStory(hold.stamp, hold.from, incarnations, db)}] [${grantStory(last.stamp, hold.from, incarnations, db)}]`,
        );
      }
      if (previous && hold.stamp <= previous.stamp) {
        tokens.push(
          `${name}: stamp ${hold.stamp} held after stamp ${previous.stamp}` +
            ` [${grantStory(hold.stamp, hold.from, incarnations, db)}] [${grantStory(previous.stamp, hold.from, incarnations, db)}]`,
        );
      }
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

  const answers = judgeAnswers(incarnations, options);
  const unreceived = judgeUnreceived(incarnations, db, options);

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
    ...answers.figures,
    ...unreceived.figures,
  };
  return {
    overlaps,
    tokens,
    fenced,
    untold,
    untyped,
    unanswered: answers.breaches,
    unreceived: unreceived.breaches,
    leftRows: db.leftRows.map(({ table, row }) => `${table} ${JSON.stringify(row)}${aboutGrant(row, db, incarnations)}`),
    figures,
  };
}

/**
 * The life of grant `stamp` as the database and its holder saw it, each time in ms relative to `hr` (the workers'
 * clock; the database's times are put on it by the offset between the two clocks the parent read at a spawn), to say
 * what a breach was made of.
 */
function grantStory(stamp: number, hr: number, incarnations: readonly Incarnation[], db: SoakDatabaseState): string {
  const offset = incarnations[0] ? incarnations[0].spawned.wall - incarnations[0].spawned.hr : 0;
  const at = (t: number) => `${t - hr >= 0 ? '+' : ''}${(t - hr).toFixed(1)}`;
  const grant = db.grants.find((g) => g.stamp === stamp);
  const parts = [`stamp ${stamp}`];
  if (grant) {
    parts.push(`granted ${at(grant.acquired - offset)}`);
    parts.push(grant.ended === null ? `${grant.status}, not ended` : `${grant.status} ${at(grant.ended - offset)}`);
  } else {
    parts.push('no log row');
  }
  const since = grant ? grant.acquired - offset : hr;
  for (const incarnation of incarnations) {
    let told = false;
    for (const e of incarnation.events) {
      if (stampOf(e) !== stamp || !['grant', 'signal', 'release-call', 'released', 'error'].includes(e.event)) continue;
      const when = e.at === undefined ? '' : ` ${at(Number(e.at))}`;
      parts.push(`${incarnation.appId}/${incarnation.pid} ${e.event}${e.event === 'signal' ? ` ${String(e.reason)}` : ''}${when}`);
      told = true;
    }
    // Its holder's pauses (SIGSTOP to SIGCONT) between the grant and `hr`.
    for (const p of told ? incarnation.pauses : []) {
      if ((p.to?.hr ?? Infinity) < Math.min(since, hr) || p.from.hr > hr) continue;
      parts.push(`${incarnation.appId}/${incarnation.pid} stopped ${at(p.from.hr)} to ${p.to ? at(p.to.hr) : 'its end'}`);
    }
  }
  return parts.join(', ');
}

/** What became of the grant a row left after shutdown names (`stamp`, or a waiter row's `granted`), if any. */
function aboutGrant(row: Record<string, unknown>, db: SoakDatabaseState, incarnations: readonly Incarnation[]): string {
  const stamp = Number(row.stamp ?? row.granted ?? NaN);
  const grant = db.grants.find((g) => g.stamp === stamp);
  if (!grant) return '';
  const received = incarnations.some((i) => ofKind(i, 'grant').some((e) => stampOf(e) === stamp));
  const released = incarnations.flatMap((i) => i.events).find((e) => e.event === 'released' && stampOf(e) === stamp);
  const failed = incarnations.flatMap((i) => i.events).find((e) => e.event === 'error' && e.op === 'releaseLocks' && stampOf(e) === stamp);
  const ended = grant.ended === null ? 'not ended' : `${grant.status} ${(grant.ended - grant.acquired).toFixed(0)} ms after its grant`;
  const release = released ? 'its release acknowledged' : failed ? `its release failed (${String(failed.name)}: ${String(failed.message)})` : 'no release acknowledged';
  return ` (its grant ${stamp}: ${ended}; ${received ? 'received by a caller' : 'received by no caller'}; ${release})`;
}

/** The part of [from, to] (hrtime ms) during which `incarnation` was stopped (SIGSTOP). */
function pausedWithin(incarnation: Incarnation, from: number, to: number): number {
  return incarnation.pauses.reduce((ms, p) => ms + Math.max(0, Math.min(to, p.to?.hr ?? Infinity) - Math.max(from, p.from.hr)), 0);
}

/**
 * Every waiter answered: each tryLocks call of a worker the test did not kill was answered, by a grant, by 0 no earlier
 * than its deadline, or by an error (typed: see `untyped`), within its `waitMs` + the 5 s a wait may take to resolve a
 * lost answer + `answerSlackMs` (the time its process was stopped left out), and before its process began to close
 * (the callers end their calls by themselves before the close: a call that the close had to answer was left pending).
 * A killed process's calls are not judged: the kill may strike any of them.
 */
function judgeAnswers(incarnations: readonly Incarnation[], options: SoakJudgeOptions): { breaches: string[]; figures: Record<string, number> } {
  const slackMs = options.answerSlackMs ?? 3000;
  const breaches: string[] = [];
  let calls = 0;
  let busy = 0;
  let longestMs = 0;
  // The most calls pending at once, over every process (a sweep of their starts and answers on the one clock).
  const edges: Array<[number, number]> = [];
  for (const incarnation of incarnations) {
    const answered = new Map<string, { event: SoakEvent; index: number }>();
    incarnation.events.forEach((event, index) => {
      const isAnswer = event.event === 'grant' || event.event === 'busy' || (event.event === 'error' && event.op === 'tryLocks');
      if (isAnswer && event.call !== undefined) answered.set(String(event.call), { event, index });
    });
    const closing = incarnation.events.findIndex((e) => e.event === 'closing');
    const end = incarnation.exited?.hr ?? Infinity;
    for (const call of ofKind(incarnation, 'call')) {
      calls++;
      const id = String(call.call);
      const at = Number(call.at);
      const waitMs = Number(call.waitMs);
      const answer = answered.get(id);
      edges.push([at, 1], [answer ? Number(answer.event.at) : end, -1]);
      if (incarnation.killed) continue;
      const who = `${incarnation.appId} (pid ${incarnation.pid}) call ${id}`;
      if (!answer) {
        breaches.push(`${who}: never answered (its process ${incarnation.exit === undefined ? 'still ran' : `exited ${incarnation.exit}`})`);
        continue;
      }
      const tookMs = Number(answer.event.at) - at;
      const awakeMs = tookMs - pausedWithin(incarnation, at, Number(answer.event.at));
      longestMs = Math.max(longestMs, awakeMs);
      if (answer.event.event === 'busy') busy++;
      if (closing >= 0 && answer.index > closing) {
        breaches.push(`${who}: still pending when its process began to close, answered by the close (${answer.event.event} ${answer.event.name ?? ''})`);
      } else if (awakeMs > waitMs + RESOLVE_GRACE_MS + slackMs) {
        breaches.push(`${who}: answered (${answer.event.event}) after ${awakeMs.toFixed(0)} ms awake, for a wait of ${waitMs} ms`);
      } else if (answer.event.event === 'busy' && tookMs < waitMs - 5) {
        breaches.push(`${who}: answered 0 after ${tookMs.toFixed(0)} ms, before its deadline (${waitMs} ms)`);
      }
    }
  }
  edges.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let pending = 0;
  let peakPending = 0;
  for (const [, step] of edges) peakPending = Math.max(peakPending, (pending += step));
  return { breaches, figures: { calls, busyAnswers: busy, longestAnswerMs: Math.round(longestMs), peakPendingCalls: peakPending } };
}

/**
 * No grant left to a waiter that is gone beyond a bound: a grant (a log row) whose stamp no caller ever received (no
 * worker reported it) must have ended within `unreceivedBoundMs` of its `acquired`, both database times. Such a grant
 * went to a waiter that was no longer there to take it (its process killed or stopped, its wait over) or whose answer
 * was lost. So must a grant that its process's caller received only after a pause, when it was granted while that
 * process was stopped (SIGSTOP, more than `nearFaultMs` after it): it was handed to a waiter that could not take it,
 * and its late receipt must not hide how long it kept the name (its holder is then told: see `untold`).
 *
 * One exception, counted in the figures (`unreceivedNearFault`): the grant's process was killed or stopped within
 * `nearFaultMs` of its `acquired` (the parent's `Date.now()` of the SIGKILL or SIGSTOP: the same clock as the
 * database's on this machine). Its own statement may have been under way, or its answer not yet reported, when it was
 * struck; nobody could receive it, and it is freed as any grant of a process gone: within its lease and a reaper
 * interval (`unreceivedNearFaultBoundMs`).
 */
function judgeUnreceived(
  incarnations: readonly Incarnation[],
  db: SoakDatabaseState,
  options: SoakJudgeOptions,
): { breaches: string[]; figures: Record<string, number> } {
  const breaches: string[] = [];
  const figures = {
    loggedGrants: db.grants.length,
    receivedWithoutLogRow: 0,
    unreceivedGrants: 0,
    unreceivedLongestMs: 0,
    unreceivedNearFault: 0,
    unreceivedNearFaultLongestMs: 0,
    grantedWhileStopped: 0,
    grantedWhileStoppedLongestMs: 0,
  };
  const boundMs = options.unreceivedBoundMs;
  if (boundMs === undefined) return { breaches, figures };
  const nearMs = options.nearFaultMs ?? 100;
  const nearBoundMs = options.unreceivedNearFaultBoundMs ?? boundMs;
  const received = new Set(incarnations.flatMap((i) => ofKind(i, 'grant').map(stampOf)));
  const logged = new Set(db.grants.map((g) => g.stamp));
  figures.receivedWithoutLogRow = [...received].filter((stamp) => !logged.has(stamp)).length;
  /** The process of a grant: its app id, the pid at the end of its `instance`, alive at its `acquired`. */
  const processOf = (grant: SoakDatabaseState['grants'][number]) => {
    const pid = Number(grant.instance.slice(grant.instance.lastIndexOf(':') + 1));
    const candidates = incarnations.filter((i) => i.appId === grant.appId && i.pid === pid);
    return candidates.findLast((i) => i.spawned.wall <= grant.acquired) ?? candidates[0];
  };
  const nearest = (wall: number) =>
    (options.timeline ?? [])
      .map((f) => ({ f, gap: wall < f.from.wall ? f.from.wall - wall : wall > f.to.wall ? wall - f.to.wall : 0 }))
      .sort((a, b) => a.gap - b.gap)[0];
  for (const grant of db.grants) {
    const lifeMs = (grant.ended ?? Infinity) - grant.acquired;
    const incarnation = processOf(grant);
    const struck = [incarnation?.killedAt, ...(incarnation?.pauses.map((p) => p.from) ?? [])].find(
      (at) => at !== undefined && Math.abs(at.wall - grant.acquired) <= nearMs,
    );
    // Granted while its process was stopped, well after the SIGSTOP: to a waiter that could not take it.
    const whileStopped = incarnation?.pauses.some(
      (p) => grant.acquired > p.from.wall + nearMs && grant.acquired < (p.to?.wall ?? Infinity),
    );
    if (received.has(grant.stamp)) {
      if (!whileStopped) continue;
      figures.grantedWhileStopped++;
      figures.grantedWhileStoppedLongestMs = Math.max(figures.grantedWhileStoppedLongestMs, Math.round(lifeMs));
    } else {
      figures.unreceivedGrants++;
    }
    if (struck) {
      figures.unreceivedNearFault++;
      figures.unreceivedNearFaultLongestMs = Math.max(figures.unreceivedNearFaultLongestMs, Math.round(lifeMs));
    } else if (!received.has(grant.stamp)) {
      figures.unreceivedLongestMs = Math.max(figures.unreceivedLongestMs, Math.round(lifeMs));
    }
    const limit = struck ? nearBoundMs : boundMs;
    if (lifeMs <= limit) continue;
    const fault = nearest(grant.acquired);
    const startMs = fault ? fault.f.from.wall - grant.acquired : 0;
    const faultSays = fault
      ? `; nearest fault: ${fault.f.kind}${fault.f.target ? ` of ${fault.f.target}` : ''}, from ${Math.abs(startMs).toFixed(0)} ms ` +
        `${startMs < 0 ? 'before' : 'after'} the grant for ${(fault.f.to.wall - fault.f.from.wall).toFixed(0)} ms`
      : '';
    const life = grant.ended === null ? 'has not ended' : `ended (${grant.status}) ${lifeMs.toFixed(0)} ms after`;
    const killedMs = incarnation?.killedAt && incarnation.killedAt.wall - grant.acquired;
    const killed = killedMs === undefined ? '' : `, killed ${Math.abs(killedMs).toFixed(0)} ms ${killedMs < 0 ? 'before' : 'after'} the grant`;
    const who = incarnation
      ? `${incarnation.appId} (pid ${incarnation.pid}${killed})`
      : `${grant.appId} (${grant.instance}: no such worker process)`;
    const receipt = received.has(grant.stamp) ? 'granted while its process was stopped' : 'received by no caller';
    const calls = incarnation ? callsAround(incarnation, grant.acquired) : '';
    breaches.push(`stamp ${grant.stamp} of ${who}, ${receipt}: ${life} its grant, bound ${limit} ms${faultSays}${calls}`);
  }
  return { breaches, figures };
}

/**
 * The calls of `incarnation` under way at `wall` (a `Date.now()` time) and how each was answered, to say what a
 * grant that no caller received was for.
 */
function callsAround(incarnation: Incarnation, wall: number): string {
  const hr = wall - (incarnation.spawned.wall - incarnation.spawned.hr); // the workers' clock at that time
  const answers = new Map(
    incarnation.events
      .filter((e) => e.event === 'grant' || e.event === 'busy' || (e.event === 'error' && e.op === 'tryLocks'))
      .map((e) => [String(e.call), e]),
  );
  const around = ofKind(incarnation, 'call').flatMap((call) => {
    const answer = answers.get(String(call.call));
    if (Number(call.at) > hr || (answer && Number(answer.at) < hr)) return [];
    const how = !answer
      ? 'never answered'
      : `answered ${answer.event}${answer.event === 'error' ? ` ${answer.name}${answer.outcomeUnknown ? ' (outcome unknown)' : ''}` : ''}` +
        `${answer.event === 'grant' ? ` ${answer.stamp}` : ''} ${(Number(answer.at) - hr).toFixed(0)} ms after it`;
    return [`call ${call.call} asked ${(hr - Number(call.at)).toFixed(0)} ms before the grant, ${how}`];
  });
  return `; its calls then: ${around.join('; ') || 'none'}`;
}
