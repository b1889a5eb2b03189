import { Injectable } from '@nestjs/common';
import { LockFence, LockService } from 'nestjs-db-locks';
import pg from 'pg';

@Injectable()
export class Repayments {
  private readonly pool = new pg.Pool({ connectionString: process.env.DATABASE_URL });

  constructor(
    private readonly locks: LockService,
    private readonly fence: LockFence,
  ) {}

  /** Repays `cents` of loan `id`; a LockLostError means nothing was written. */
  async repay(id: number, cents: number): Promise<boolean> {
    const stamp = await this.locks.tryLocks([`loan:${id}_WRITE`], { waitMs: 2000 });
    if (stamp === 0) return false;
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      await client.query('UPDATE loans SET balance = balance - $1 WHERE id = $2', [cents, id]);
      await client.query('INSERT INTO repayments (loan_id, cents) VALUES ($1, $2)', [id, cents]);
      await this.fence.fenceAndCommit(client, stamp); // LockLostError: rolled back
      return true;
    } finally {
      client.release();
      await this.locks.releaseLocks(stamp);
    }
  }
}
