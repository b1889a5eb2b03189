import type { PrismaClient } from '@prisma/client';
import { Controller, type INestApplication, Param, Post } from '@nestjs/common';
import { LockAdminService, LockFence, LockService, WithLocks } from 'nestjs-db-locks';
import { DIALECTS } from '../support/dialects.js';
import { Gate } from '../support/gate.js';
import { type LoanDesk, openLoanDesk } from './loan-desk.js';
import { openPrisma, repay } from './prisma-repayments.js';
import { listenWithoutTypeOrm } from './loans-http-app.js';

let prisma: PrismaClient;
/** Where a repayment stops before its fence while the test holds it (open otherwise), and the stamp it holds. */
let beforeFence = new Gate();
let held = 0;

@Controller('loans')
class LoansController {
  constructor(
    private readonly locks: LockService,
    private readonly fence: LockFence,
  ) {}

  @Post(':id/repay')
  @WithLocks({ locks: (id: string) => [`loan:${id}_WRITE`] })
  async repay(@Param('id') id: string): Promise<{ repaid: boolean }> {
    held = this.locks.currentLock()!.stamp;
    await repay(prisma, this.fence, held, Number(id), 10, { beforeFence: () => beforeFence.pass() });
    return { repaid: true };
  }
}

for (const dialect of DIALECTS) {
  dialect.describe(`a lost Prisma fence over HTTP, on ${dialect.name}`, () => {
    let desk: LoanDesk;
    let app: INestApplication;
    let baseUrl: string;

    beforeAll(async () => {
      desk = await openLoanDesk(dialect, 'prisma-desk');
      await desk.db.query(
        dialect.name === 'PostgreSQL'
          ? 'ALTER TABLE repayments ADD COLUMN id serial PRIMARY KEY'
          : 'ALTER TABLE repayments ADD COLUMN id int AUTO_INCREMENT PRIMARY KEY',
      );
      prisma = openPrisma(dialect, desk.db.url);
      ({ app, baseUrl } = await listenWithoutTypeOrm(desk.db.url, 'prisma-http', LoansController));
    });
    afterAll(async () => {
      await app?.close();
      await prisma?.$disconnect();
      await desk?.close();
    });

    it('answers 201 when the fenced repayment committed, and 409 when its grant was forced free before the commit', async () => {
      beforeFence = new Gate();
      beforeFence.open();
      expect((await fetch(`${baseUrl}/loans/1/repay`, { method: 'POST' })).status).toBe(201);
      expect(await desk.repayments(1)).toBe(1);

      beforeFence = new Gate();
      const response = fetch(`${baseUrl}/loans/2/repay`, { method: 'POST' });
      await beforeFence.reached();
      await app.get(LockAdminService).forceRelease(held, 'stuck repayment');
      beforeFence.open();
      expect((await response).status).toBe(409);
      expect(await desk.repayments(2)).toBe(0);
    });
  });
}
