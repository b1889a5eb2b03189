import type { LockLogEntry } from '../interfaces/index.js';
import { shortText } from './error-value.util.js';

/**
 * Why a grant of `appId` that a statement no longer found (a renewal, a release, business done) is gone, from its log
 * row, as the end of an error message: released, reaped, recovered, or forced (by whom and why); its lease expired
 * when the row says it is still live; another app's when it was; unknown when no row has the stamp (never granted, or
 * its row was pruned). `entry` is undefined when there is no row or it could not be read.
 * @internal
 */
export function grantEndReason(entry: LockLogEntry | undefined, appId: string): string {
  if (entry === undefined) return 'no grant has this stamp in the lock log (unknown, or its log row was pruned)';
  if (entry.appId !== appId) return `it is a grant of app "${entry.appId}", not of this one`;
  switch (entry.status) {
    case 'FORCED':
      return `its release was forced by ${entry.endedBy ?? 'an admin'}: ${shortText(entry.endReason ?? 'no reason given')}`;
    case 'REAPED':
      return 'its lease ended without a renewal and a reaper freed it';
    case 'RECOVERED':
      return 'it was recovered: an instance with this appId freed its previous grants at start-up';
    case 'RELEASED':
      return 'it was already released';
    default:
      return 'its lease expired (database clock) while the grant was still recorded as live';
  }
}
