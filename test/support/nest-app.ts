import { type INestApplication, Module, type Type } from '@nestjs/common';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';
import { LockService } from 'nestjs-db-locks';
import { lockAppImports, type TestLockOptions } from './lock-app.js';

/** One application instance of a test: an HTTP server on a free port, its `LockService`, and a way to stop it. */
export interface TestNestApp {
  readonly app: INestApplication;
  readonly locks: LockService;
  readonly baseUrl: string;
  close(): Promise<void>;
}

/**
 * Boots a full Nest HTTP application (TypeORM + schedule + LockModule) with the given controllers and providers, on
 * Express (the default) or Fastify.
 */
export async function createNestApp(
  url: string,
  options: TestLockOptions,
  parts: { controllers?: Type[]; providers?: Type[]; platform?: 'express' | 'fastify' } = {},
): Promise<TestNestApp> {
  @Module({
    imports: lockAppImports(url, options),
    controllers: parts.controllers ?? [],
    providers: parts.providers ?? [],
  })
  class TestAppModule {}

  const moduleRef = await Test.createTestingModule({ imports: [TestAppModule] }).compile();
  const app =
    parts.platform === 'fastify'
      ? moduleRef.createNestApplication<NestFastifyApplication>(new FastifyAdapter(), { logger: false })
      : moduleRef.createNestApplication({ logger: false });
  await app.listen(0, '127.0.0.1');
  const address = app.getHttpServer().address() as { port: number };
  return {
    app,
    locks: app.get(LockService),
    baseUrl: `http://127.0.0.1:${address.port}`,
    close: () => app.close(),
  };
}
