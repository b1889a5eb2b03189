import type { Attributes } from '@opentelemetry/api';
import type { LockMode } from '../interfaces/index.js';

/** How an acquisition ended, as the `outcome` attribute. @internal */
export type AcquireOutcome = 'granted' | 'busy' | 'error';

/** The attribute sets of one lock (name label, mode), built once and shared by every data point. @internal */
export interface LockAttributes {
  /** `lock.name`, `lock.mode`, `app.id`. */
  readonly base: Attributes;
  /** The same with `outcome`. */
  readonly outcome: Readonly<Record<AcquireOutcome, Attributes>>;
}

/**
 * The default `lockNameAttribute`: the name up to its first `:` (`loan:123` → `loan`).
 * @internal
 */
export function defaultLockNameAttribute(name: string): string {
  const colon = name.indexOf(':');
  return colon < 0 ? name : name.slice(0, colon);
}

/** Past this many entries a cache starts again empty: a name mapping that returns unbounded values cannot leak. */
const MAX_CACHED = 4096;

/**
 * Pre-built attribute objects per (name label, mode, outcome), so that recording allocates nothing: raw names map to
 * their label (`lockNameAttribute`, computed once per name), labels to their attribute sets.
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
      if (this.byLabel.size >= MAX_CACHED) this.byLabel.clear();
      this.byLabel.set(label, modes);
    }
    return modes;
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
    };
  }
}
