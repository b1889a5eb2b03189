import type { PrismaClient } from '@prisma/client';
import { Controller, type INestApplication, Module, Param, Post } from '@nestjs/common';
import { ScheduleModule } from '@nestjs/schedule';
import { Test } from '@nestjs/testing';
import { LockAdminService, LockFence, LockModule, LockService, WithLocks } from 'nestjs-db-locks';
import { DIALECTS } from '../support/dialects.js';
import { Gate } from '../support/gate.js';
import { type LoanDesk, openLoanDesk } from './loan-desk.js';
import { openPrisma, repay } from './prisma-repayments.js';

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
      @Module({
        imports: [ScheduleModule.forRoot(), LockModule.forRoot({ appId: 'prisma-http', url: desk.db.url })],
        controllers: [LoansController],
      })
      class AppModule {}
      const moduleRef = await Test.createTestingModule({ imports: [AppModule] }).compile();
      app = moduleRef.createNestApplication({ logger: false });
      await app.listen(0, '127.0.0.1');
      baseUrl = `http://127.0.0.1:${(app.getHttpServer().address() as { port: number }).port}`;
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
