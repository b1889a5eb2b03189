import { leaderLockName } from '../../leader/leader-role.util.js';
import { type LeaderElection, LeaderTermStore } from '../leader-terms.store.js';
import type { PostgresStatementRunner } from './postgres-statement.runner.js';
import * as SQL from './postgres-leader.queries.sql.js';

/** `LeaderTermStore` on PostgreSQL: an election is one statement. @internal */
export class PostgresLeaderTermStore extends LeaderTermStore {
  constructor(private readonly runner: PostgresStatementRunner) {
    super();
  }

  async elect(role: string, stamp: number, appId: string, instance: string): Promise<LeaderElection | undefined> {
    const { rows } = await this.runner.run<{ term: string; elected_ms: number }>('electLeader', false, {
      text: SQL.ELECT_LEADER,
      values: [role, stamp, appId, instance, leaderLockName(role)],
    });
    const row = rows[0];
    return row === undefined ? undefined : { term: Number(row.term), electedAt: Math.round(Number(row.elected_ms)) };
  }
}
