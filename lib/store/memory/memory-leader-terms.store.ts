import { leaderLockName } from '../../leader/leader-role.util.js';
import { type LeaderElection, LeaderTermStore } from '../leader-terms.store.js';
import type { InMemoryLockDatabase } from './memory-lock.database.js';

/** `LeaderTermStore` over `InMemoryLockDatabase`, with the SQL stores' semantics. @internal */
export class MemoryLeaderTermStore extends LeaderTermStore {
  constructor(private readonly database: InMemoryLockDatabase) {
    super();
  }

  elect(role: string, stamp: number, appId: string, instance: string): Promise<LeaderElection | undefined> {
    const db = this.database;
    const grant = db.log.get(stamp);
    const live =
      grant !== undefined &&
      grant.appId === appId &&
      (grant.status === 'ACQUIRED' || grant.status === 'BUSINESS_DONE') &&
      grant.leaseExpires > db.now() &&
      !db.holders(leaderLockName(role)).some((row) => row.stamp !== stamp);
    if (!live) return Promise.resolve(undefined);
    const row = db.leaders.get(role);
    if (row === undefined) {
      db.leaders.set(role, { term: 1, stamp, appId, instance, elected: db.now() });
    } else if (row.stamp < stamp) {
      Object.assign(row, { term: row.term + 1, stamp, appId, instance, elected: db.now() });
    } else if (row.stamp > stamp) {
      return Promise.resolve(undefined);
    }
    const won = db.leaders.get(role)!;
    return Promise.resolve({ term: won.term, electedAt: won.elected });
  }
}
