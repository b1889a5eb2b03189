import { type INestApplication, Module, type Type } from '@nestjs/common';
import { ScheduleModule } from '@nestjs/schedule';
import { Test } from '@nestjs/testing';
import { LockModule } from 'nestjs-db-locks';

/** An HTTP application with no TypeORM of its own (`LockModule.forRoot({ appId, url })`) serving `controller`. */
export async function listenWithoutTypeOrm(
  url: string,
  appId: string,
  controller: Type,
): Promise<{ app: INestApplication; baseUrl: string }> {
  @Module({ imports: [ScheduleModule.forRoot(), LockModule.forRoot({ appId, url })], controllers: [controller] })
  class AppModule {}
  const moduleRef = await Test.createTestingModule({ imports: [AppModule] }).compile();
  const app = moduleRef.createNestApplication({ logger: false });
  await app.listen(0, '127.0.0.1');
  return { app, baseUrl: `http://127.0.0.1:${(app.getHttpServer().address() as { port: number }).port}` };
}
