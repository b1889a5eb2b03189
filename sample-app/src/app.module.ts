import { type DynamicModule, Module } from '@nestjs/common';
import { ScheduleModule } from '@nestjs/schedule';
import { TypeOrmModule } from '@nestjs/typeorm';
import { LockModule, type LockModuleOptions } from 'nestjs-db-locks';
import { ActivityModule } from './activity/activity.module.js';
import { SampleConfigModule } from './config/sample-config.module.js';
import { SAMPLE_CONFIG, type SampleConfig } from './config/sample.config.js';
import { ConsoleModule } from './console/console.module.js';
import { sampleDatabaseTarget, sampleDataSourceOptions } from './database/sample-dialect.js';
import { SAMPLE_MIGRATIONS } from './database/sample.migrations.js';
import { HealthModule } from './health/health.module.js';
import { LoanBookModule } from './loans/loan-book.module.js';
import { LoansModule } from './loans/loans.module.js';
import { MetricsModule } from './metrics/metrics.module.js';
import { Ws1Module } from './ws1/ws1.module.js';
import { Ws2Module } from './ws2/ws2.module.js';

/** `LockModule`'s options for one instance of the sample. */
export function lockOptionsOf(config: SampleConfig): LockModuleOptions {
  return {
    appId: config.appId,
    defaultPermits: { read: config.defaultReadPermits, write: 1 },
    permitsRefreshIntervalMs: config.permitsRefreshIntervalMs,
    leaseMs: config.leaseMs,
    reaperIntervalMs: config.reaperIntervalMs,
    maxHoldMs: config.maxHoldMs,
  };
}

/**
 * One instance of the sample: WS1 and WS2 (seed 000), the loans (seed 002) and their leader role (the loan book
 * report), the lock console and `/health`, on one
 * shared PostgreSQL, MySQL or MariaDB database (the scheme of `databaseUrl` picks it). Wired the way a user wires the
 * library: the application owns TypeORM and the scheduler, `LockModule` borrows both (told the dialect, which picks
 * the lock entities it registers).
 */
@Module({})
export class AppModule {
  /** The module for `config` (`main.ts` builds it from the environment; the tests build their own). */
  static forRoot(config: SampleConfig): DynamicModule {
    const { dialect } = sampleDatabaseTarget(config.databaseUrl);
    return {
      module: AppModule,
      imports: [
        SampleConfigModule.forRoot(config),
        TypeOrmModule.forRoot({
          ...sampleDataSourceOptions(config.databaseUrl, config.appId),
          // The features' entities and LockModule's (the MySQL ones with dialect 'mysql'), each process on one dialect.
          autoLoadEntities: true,
          migrations: SAMPLE_MIGRATIONS,
          migrationsRun: true,
        }),
        // The jobs are @Cron / @Interval methods; turning their discovery off stops them (the tests run jobs on
        // demand). LockModule's own tasks register with SchedulerRegistry directly and keep running.
        ScheduleModule.forRoot({ cronJobs: config.schedule, intervals: config.schedule }),
        LockModule.forRootAsync({
          dialect,
          inject: [SAMPLE_CONFIG],
          useFactory: (sample: SampleConfig) => lockOptionsOf(sample),
        }),
        ActivityModule,
        Ws1Module,
        Ws2Module,
        LoansModule,
        // The leader role: every instance stands for it, one leads (off with LOAN_BOOK_REPORT_MS=0).
        ...(config.loanBookReportMs > 0 ? [LoanBookModule] : []),
        ConsoleModule,
        MetricsModule,
        HealthModule,
      ],
    };
  }
}
