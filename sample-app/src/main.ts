import 'reflect-metadata';
import { type INestApplication, Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { DataSource } from 'typeorm';
import { AppModule } from './app.module.js';
import { clusterFromEnv, sampleBanner } from './banner.js';
import { sampleConfigFromEnv } from './config/sample.config.js';
import { openSampleDatabase, type SampleDatabase } from './database/sample-database.js';
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
  // return503OnClosing: once Ctrl+C is pressed, a new request is answered 503 while the calls in flight finish.
  const app = await NestFactory.create(AppModule.forRoot(config), {
    logger: ['log', 'warn', 'error'],
    return503OnClosing: true,
  });
  await app.listen(port, host);
  stopOnSignals(app, database, config.appId, logger);

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

/**
 * Ctrl+C (SIGINT) or SIGTERM drains the instance: new requests get 503, the locked calls in flight finish (their HTTP
 * responses are sent) and release their locks, the HTTP server and the DataSource close (`app.close()`), and only then
 * the embedded PostgreSQL this process started stops. The same signal a second time exits at once (the locks of the
 * calls cut short come back when this app id starts again: RECOVERED in the log).
 */
function stopOnSignals(app: INestApplication, database: SampleDatabase, appId: string, logger: Logger): void {
  let draining: NodeJS.Signals | undefined;
  const stop = async (signal: NodeJS.Signals): Promise<void> => {
    if (draining) {
      // In a cluster an instance gets the terminal's SIGINT and its parent's SIGTERM: only a repeat forces.
      if (signal !== draining) return;
      logger.warn(`${signal} again: exiting now, without waiting for the calls in flight`);
      process.exit(130);
    }
    draining = signal;
    logger.log(
      `${signal}: draining ${appId}: new requests get 503, calls in flight finish and release their locks` +
        `${database.started ? ', then PostgreSQL stops' : ''} (${signal} again: exit now)`,
    );
    let code = 0;
    try {
      await app.close();
      logger.log(`${appId} closed${database.started ? '; stopping PostgreSQL' : ''}`);
    } catch (error) {
      code = 1;
      logger.error(`closing ${appId} failed: ${(error as Error).message}`);
    }
    await database.stop();
    process.exit(code);
  };
  process.on('SIGINT', (signal) => void stop(signal));
  process.on('SIGTERM', (signal) => void stop(signal));
}

main().catch((error: unknown) => {
  process.stderr.write(
    `The sample did not start: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  process.exit(1);
});
