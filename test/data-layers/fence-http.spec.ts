import { Controller, type INestApplication, Param, Post } from '@nestjs/common';
import { LockAdminService, LockFence, LockService, WithLocks } from 'nestjs-db-locks';
import { DIALECTS } from '../support/dialects.js';
import type { TestDatabase } from '../support/test-database.js';
import { type BusinessPool, businessPool } from './business-pool.js';
import { listenWithoutTypeOrm } from './loans-http-app.js';

let business: BusinessPool;
/** Where the handler stops once it holds its lock: the test ends the grant meanwhile. */
const gate = { entered: (_stamp: number) => undefined as void, proceed: Promise.resolve() };

@Controller('loans')
class LoansController {
  constructor(
    private readonly locks: LockService,
    private readonly fence: LockFence,
  ) {}

  @Post(':id/repay')
  @WithLocks({ locks: (id: string) => [`loan:${id}_WRITE`] })
  async repay(@Param('id') id: string): Promise<{ repaid: boolean }> {
    const { stamp } = this.locks.currentLock()!;
    gate.entered(stamp);
    await gate.proceed;
    const tx = await business.begin();
    try {
      await tx.run('INSERT INTO repayments (loan_id, amount) VALUES ($1, 10)', [Number(id)]);
      await this.fence.fenceAndCommit(tx.connection, stamp);
    } finally {
      await tx.end();
    }
    return { repaid: true };
  }
}

for (const dialect of DIALECTS) {
  dialect.describe(`a lost fence over HTTP, on ${dialect.name}`, () => {
    let db: TestDatabase;
    let app: INestApplication;
    let baseUrl: string;

    beforeAll(async () => {
      db = await dialect.createDatabase();
      await db.query('CREATE TABLE repayments (loan_id int NOT NULL, amount int NOT NULL)');
      business = businessPool(dialect, db.url);
      ({ app, baseUrl } = await listenWithoutTypeOrm(db.url, 'fence-http', LoansController));
    });
    afterAll(async () => {
      await business?.close();
      await app?.close();
      await db?.drop();
    });

    const repayments = async () => Number((await db.query<{ n: string }>('SELECT count(*) AS n FROM repayments'))[0]!.n);

    it('answers 201 when the fenced repayment committed, and 409 when its grant was forced free before the commit', async () => {
      gate.entered = () => undefined;
      gate.proceed = Promise.resolve();
      expect((await fetch(`${baseUrl}/loans/1/repay`, { method: 'POST' })).status).toBe(201);
      expect(await repayments()).toBe(1);

      let proceed!: () => void;
      gate.proceed = new Promise((resolve) => (proceed = resolve));
      const held = new Promise<number>((resolve) => (gate.entered = resolve));
      const response = fetch(`${baseUrl}/loans/2/repay`, { method: 'POST' });
      await app.get(LockAdminService).forceRelease(await held, 'stuck repayment');
      proceed();
      const answer = await response;
      expect(answer.status).toBe(409);
      expect(await repayments()).toBe(1);
    });
  });
}
