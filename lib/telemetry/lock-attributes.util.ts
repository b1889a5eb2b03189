import type { Attributes } from '@opentelemetry/api';
import type { LockMode } from '../interfaces/index.js';

/** How an acquisition ended, as the `outcome` attribute. @internal */
export type AcquireOutcome = 'granted' | 'busy' | 'error';

/**
 * The attribute sets of one lock (name label, mode), built once and shared by every data point, and its counts:
 * counted here on the hot path (an increment, no SDK call) and reported by observable counters when the metrics are
 * collected.
 * @internal
 */
export interface LockAttributes {
  /** `lock.name`, `lock.mode`, `app.id`. */
  readonly base: Attributes;
  /** The same with `outcome`. */
  readonly outcome: Readonly<Record<AcquireOutcome, Attributes>>;
  /** Locks granted, refused as busy, released, since the module started. */
  readonly counts: { grants: number; busy: number; releases: number };
}

/**
 * The default `lockNameAttribute`: the name up to its first `:` (`loan:123` → `loan`).
 * @internal
 */
export function defaultLockNameAttribute(name: string): string {
  const colon = name.indexOf(':');
  return colon < 0 ? name : name.slice(0, colon);
}

/** Past this many entries the raw-name cache starts again empty: names made per record cannot grow it forever. */
const MAX_CACHED = 4096;

/**
 * Pre-built attribute objects per (name label, mode, outcome), so that recording allocates nothing: raw names map to
 * their label (`lockNameAttribute`, computed once per name), labels to their attribute sets. The labels are kept for
 * the life of the module (their counts with them): they are the bounded set of series the mapping promises.
 * @internal
 */
export class LockAttributeCache {
  private readonly byName = new Map<string, Readonly<Record<LockMode, LockAttributes>>>();
  private readonly byLabel = new Map<string, Readonly<Record<LockMode, LockAttributes>>>();
  /** `app.id` alone, for the instruments without a lock name. */
  readonly app: Attributes;

  constructor(
    private readonly appId: string,
    private readonly label: (name: string) => string,
  ) {
    this.app = { 'app.id': appId };
  }

  /** The attribute sets of the lock `name` in `mode`. */
  of(name: string, mode: LockMode): LockAttributes {
    let modes = this.byName.get(name);
    if (!modes) {
      modes = this.ofLabel(this.labelOf(name));
      if (this.byName.size >= MAX_CACHED) this.byName.clear();
      this.byName.set(name, modes);
    }
    return modes[mode];
  }

  /** The mapped name; the default mapping's when the configured one throws (a metric never fails a lock call). */
  private labelOf(name: string): string {
    try {
      return String(this.label(name));
    } catch {
      return defaultLockNameAttribute(name);
    }
  }

  private ofLabel(label: string): Readonly<Record<LockMode, LockAttributes>> {
    let modes = this.byLabel.get(label);
    if (!modes) {
      modes = { read: this.build(label, 'read'), write: this.build(label, 'write') };
      this.byLabel.set(label, modes);
    }
    return modes;
  }

  /** Every lock's attribute sets and counts, for the observable counters. */
  *all(): IterableIterator<LockAttributes> {
    for (const modes of this.byLabel.values()) {
      yield modes.read;
      yield modes.write;
    }
  }

  private build(label: string, mode: LockMode): LockAttributes {
    const base = { 'lock.name': label, 'lock.mode': mode, 'app.id': this.appId };
    return {
      base,
      outcome: {
        granted: { ...base, outcome: 'granted' },
        busy: { ...base, outcome: 'busy' },
        error: { ...base, outcome: 'error' },
      },
      counts: { grants: 0, busy: 0, releases: 0 },
    };
  }
}
