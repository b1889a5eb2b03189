import 'reflect-metadata';
import { type INestApplication, Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { resolve } from 'node:path';
import { openSampleDatabase, type SampleDatabase } from '../../src/database/sample-database.js';
import { PrismaSampleModule } from './app.module.js';
import { createLoanTables } from './loan-tables.js';
import { PrismaService } from './prisma.service.js';

/**
 * `npm run start:prisma`: the loan repayment sample on Prisma 7 (`@prisma/adapter-pg`), on embedded PostgreSQL with
 * its data in `.data/sample-prisma-pg` (or `SAMPLE_DATA_DIR`), or on `DATABASE_URL` (`postgres://` only).
 * Environment: `PORT` (3000), `HOST` (127.0.0.1), `APP_ID` (prisma-1), `DATABASE_URL`, `SAMPLE_DATA_DIR`.
 */
async function main(): Promise<void> {
  const logger = new Logger('PrismaSample');
  const dataDir = resolve(process.env.SAMPLE_DATA_DIR || resolve(process.cwd(), '.data', 'sample-prisma-pg'));
  const database = await openSampleDatabase(process.env, dataDir);
  if (database.dialect !== 'postgres') {
    throw new Error(`the Prisma sample runs on PostgreSQL only: DATABASE_URL is ${database.source}`);
  }
  const appId = process.env.APP_ID || 'prisma-1';
  const port = Number(process.env.PORT || 3000);
  const host = process.env.HOST || '127.0.0.1';
  const app = await NestFactory.create(PrismaSampleModule.forRoot({ appId, url: database.url }), {
    logger: ['log', 'warn', 'error'],
  });
  await app.init(); // the lock tables (migrationsRun), then the sample's own
  await createLoanTables(app.get(PrismaService));
  await app.listen(port, host);
  stopOnSignals(app, database, logger);
  const shown = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
  for (const note of database.notes) logger.warn(note);
  process.stdout.write(
    [
      '',
      `  Prisma loan sample (${appId}, pid ${process.pid}) on ${database.source}`,
      `  repay: curl -X POST -H 'Content-Type: application/json' -d '{"amountCents": 2500}' ` +
        `http://${shown}:${port}/loans/1/repayments`,
      '',
      '',
    ].join('\n'),
  );
}

/** Ctrl+C or SIGTERM: the app closes (calls in flight finish and release), then the embedded PostgreSQL it started. */
function stopOnSignals(app: INestApplication, database: SampleDatabase, logger: Logger): void {
  let stopping = false;
  const stop = async (signal: NodeJS.Signals): Promise<void> => {
    if (stopping) process.exit(130); // the same signal again: now
    stopping = true;
    logger.log(`${signal}: closing${database.started ? ', then stopping PostgreSQL' : ''}`);
    let code = 0;
    await app.close().catch((error: Error) => {
      code = 1;
      logger.error(`closing failed: ${error.message}`);
    });
    await database.stop();
    process.exit(code);
  };
  process.on('SIGINT', (signal) => void stop(signal));
  process.on('SIGTERM', (signal) => void stop(signal));
}

main().catch((error: unknown) => {
  const reason = error instanceof Error ? (error.stack ?? error.message) : String(error);
  process.stderr.write(`The Prisma sample did not start: ${reason}\n`);
  process.exit(1);
});
