import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { DataSource } from 'typeorm';
import { AppModule } from './app.module.js';
import { clusterFromEnv, sampleBanner } from './banner.js';
import { sampleConfigFromEnv } from './config/sample.config.js';
import { openSampleDatabase } from './database/sample-database.js';
import { sampleServerName } from './database/sample-dialect.js';
import { registerSampleMetrics } from './metrics/sample-metrics.js';

/**
 * `npm start`: one instance of the sample on embedded PostgreSQL (or on `DATABASE_URL`: `postgres://`, or `mysql://` /
 * `mariadb://` for MySQL or MariaDB), serving the lock console.
 * Environment: `PORT` (3000), `HOST` (127.0.0.1), `APP_ID` (sample-1), `DATABASE_URL`, and the tuning variables of
 * `sampleConfigFromEnv`.
 */
async function main(): Promise<void> {
  const logger = new Logger('Sample');
  const database = await openSampleDatabase(process.env);
  const config = sampleConfigFromEnv(process.env, database.url);
  const port = Number(process.env.PORT || 3000);
  const host = process.env.HOST || '127.0.0.1';
  // Before the application starts: LockModule takes its meter from the provider registered now (GET /metrics).
  registerSampleMetrics();
  const app = await NestFactory.create(AppModule.forRoot(config), { logger: ['log', 'warn', 'error'] });
  await app.listen(port, host);

  let stopping = false;
  const stop = async (signal: NodeJS.Signals): Promise<void> => {
    if (stopping) return;
    stopping = true;
    logger.log(`${signal}: closing ${config.appId}${database.started ? ', then PostgreSQL' : ''}`);
    await app.close();
    await database.stop();
    process.exit(0);
  };
  process.once('SIGINT', (signal) => void stop(signal));
  process.once('SIGTERM', (signal) => void stop(signal));

  for (const note of database.notes) logger.warn(note);
  const shown = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
  const cluster = clusterFromEnv(process.env);
  const banner = sampleBanner({
    appId: config.appId,
    pid: process.pid,
    url: `http://${shown}:${port}/`,
    database: cluster?.database ?? database.source,
    server: await sampleServerName(app.get(DataSource)).catch(() => undefined),
    dialect: database.dialect,
    jobs: config.schedule,
    cluster,
  });
  process.stdout.write(['', ...banner.map((line) => `  ${line}`), '', ''].join('\n'));
}

main().catch((error: unknown) => {
  process.stderr.write(
    `The sample did not start: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  process.exit(1);
});
