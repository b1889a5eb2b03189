import { leaderLockName } from '../../leader/leader-role.util.js';
import { type LeaderElection, LeaderTermStore } from '../leader-terms.store.js';
import type { MysqlStatementRunner } from './mysql-statement.runner.js';
import * as SQL from './mysql-leader.queries.sql.js';

/** `LeaderTermStore` on MySQL and MariaDB: an election is one transaction of three statements. @internal */
export class MysqlLeaderTermStore extends LeaderTermStore {
  constructor(private readonly runner: MysqlStatementRunner) {
    super();
  }

  elect(role: string, stamp: number, appId: string, instance: string): Promise<LeaderElection | undefined> {
    return this.runner.transaction('electLeader', false, async (tx) => {
      const { affectedRows } = await tx.write(SQL.TAKE_LIVE_GRANT, [stamp, appId, leaderLockName(role), stamp]);
      if (affectedRows === 0) return undefined;
      await tx.write(SQL.UPSERT_TERM, [role, stamp, appId, instance]);
      const [row] = await tx.select<{ term: string | number; stamp: string | number; elected_ms: string | number }>(
        SQL.SELECT_TERM,
        [role],
      );
      if (row === undefined || Number(row.stamp) !== stamp) return undefined;
      return { term: Number(row.term), electedAt: Math.round(Number(row.elected_ms)) };
    });
  }
}
