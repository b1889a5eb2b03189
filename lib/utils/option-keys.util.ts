import { LockConfigurationError } from '../errors/index.js';

/**
 * Throws `LockConfigurationError` when `value` has a key that is not in `known`, naming the closest valid key
 * (`leaseMS` → `leaseMs`): a misspelt option would otherwise be ignored and its default used in silence.
 * `where` names the object, e.g. `LockModule option` or `LockModule option retry`. @internal
 */
export function assertKnownKeys(where: string, value: object, known: readonly string[]): void {
  for (const key of Object.keys(value)) {
    if (known.includes(key)) continue;
    const closest = closestKey(key, known);
    throw new LockConfigurationError(
      `${where} has an unknown key ${JSON.stringify(key.slice(0, 80))}` +
        (closest === undefined ? '' : `: did you mean ${JSON.stringify(closest)}?`) +
        ` (valid keys: ${known.join(', ')})`,
    );
  }
}

/** The known key nearest to `key` (case-insensitive edit distance), when it is near enough to be a typo. */
function closestKey(key: string, known: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const candidate of known) {
    const distance = editDistance(key.toLowerCase(), candidate.toLowerCase());
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return bestDistance <= Math.max(2, Math.floor(key.length / 3)) ? best : undefined;
}

/** Levenshtein distance. */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = current;
  }
  return previous[b.length]!;
}
