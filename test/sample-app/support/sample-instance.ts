import type { INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { LockService } from 'nestjs-db-locks';
import { setTimeout as sleep } from 'node:timers/promises';
import { AppModule } from '../../../sample-app/src/app.module.js';
import { DEFAULT_SAMPLE_CONFIG, type SampleConfig } from '../../../sample-app/src/config/sample.config.js';

/** One running instance of the sample application, on a free port. */
export interface SampleInstance {
  readonly app: INestApplication;
  readonly locks: LockService;
  readonly baseUrl: string;
  readonly config: SampleConfig;
  close(): Promise<void>;
}

/** Test defaults: no scheduled jobs (the tests run them on demand) and short durations. */
export const TEST_SAMPLE_CONFIG: Omit<SampleConfig, 'databaseUrl' | 'appId'> = {
  ...DEFAULT_SAMPLE_CONFIG,
  schedule: false,
  ws1RebuildMs: 1200,
  ws2RebuildMs: 600,
  repaymentMs: 200,
  transferMs: 150,
  permitsRefreshIntervalMs: 300,
  leaseMs: 5000,
  reaperIntervalMs: 1000,
  consolePollMs: 200,
  loanBookReportMs: 0, // no leader role unless a test asks for it (its grant would show in every table)
};

/**
 * Boots the sample's real `AppModule` (it runs its migrations on first start) and listens on 127.0.0.1. The URL's
 * scheme picks the dialect, as `DATABASE_URL` does for `npm start`: `postgres://`, or `mysql://` / `mariadb://`. One
 * test file boots one dialect only (`autoLoadEntities`: @nestjs/typeorm keeps a DataSource's entities process-wide).
 */
export async function startSampleInstance(
  databaseUrl: string,
  overrides: Partial<SampleConfig> & { appId: string },
): Promise<SampleInstance> {
  const config: SampleConfig = { ...TEST_SAMPLE_CONFIG, databaseUrl, ...overrides };
  const app = await NestFactory.create(AppModule.forRoot(config), { logger: false });
  await app.listen(0, '127.0.0.1');
  const { port } = app.getHttpServer().address() as { port: number };
  return { app, locks: app.get(LockService), baseUrl: `http://127.0.0.1:${port}`, config, close: () => app.close() };
}

/** A response, its status and its parsed JSON body. */
export interface JsonResponse<T> {
  readonly status: number;
  readonly headers: Headers;
  readonly body: T;
}

/** GET or POST (with a JSON body) and parse the JSON answer. */
export async function call<T = unknown>(url: string, body?: unknown): Promise<JsonResponse<T>> {
  const response = await fetch(url, {
    method: body === undefined ? 'GET' : 'POST',
    headers: body === undefined ? {} : { 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, headers: response.headers, body: (await response.json()) as T };
}

/** Polls `probe` until it returns a value other than `undefined`; fails after `timeoutMs`. */
export async function eventually<T>(probe: () => Promise<T | undefined>, what: string, timeoutMs = 5000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

/** The grant of `instance`'s view holding `name` in `mode`, if any. */
export async function grantOf(
  instance: SampleInstance,
  name: string,
  mode: 'read' | 'write',
): Promise<{ stamp: number; appId: string } | undefined> {
  const grants = await instance.locks.getGrants();
  return grants.find((grant) => grant.locks.some((lock) => lock.name === name && lock.mode === mode));
}
