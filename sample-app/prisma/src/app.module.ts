import { type DynamicModule, Module } from '@nestjs/common';
import { ScheduleModule } from '@nestjs/schedule';
import { LockModule } from 'nestjs-db-locks';
import { LoansController } from './loans.controller.js';
import { PrismaLockTransactions } from './prisma-lock-transactions.js';
import { DATABASE_URL, PrismaService } from './prisma.service.js';
import { RepaymentService } from './repayment.service.js';

@Module({})
export class PrismaSampleModule {
  /** The sample on `url`: Prisma for the loans, and the library on a connection of its own (no TypeORM of yours). */
  static forRoot(options: { appId: string; url: string }): DynamicModule {
    return {
      module: PrismaSampleModule,
      imports: [
        ScheduleModule.forRoot(), // runs LockModule's lease renewal and reaper
        LockModule.forRoot({ appId: options.appId, url: options.url, migrationsRun: true }), // its tables at start-up
      ],
      controllers: [LoansController],
      providers: [{ provide: DATABASE_URL, useValue: options.url }, PrismaService, PrismaLockTransactions, RepaymentService],
    };
  }
}
