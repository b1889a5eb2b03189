import { type INestApplicationContext, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ScheduleModule } from '@nestjs/schedule';
import { TypeOrmModule } from '@nestjs/typeorm';
import { LockModule, LockService } from 'nestjs-db-locks';
import type { BenchGroup } from '../workloads.js';
import type { Contender, ContenderSession } from './contender.js';

/** Connections of the application's pool, as many as the raw contenders' dedicated clients in W2. */
const POOL_MAX = 16;

/** Boots a Nest application context the way a user wires the library. */
export async function bootApplication(url: string, appId = 'bench'): Promise<INestApplicationContext> {
  @Module({
    imports: [
      TypeOrmModule.forRoot({ type: 'postgres', url, extra: { max: POOL_MAX } }),
      ScheduleModule.forRoot(),
      LockModule.forRoot({ appId }),
    ],
  })
  class BenchAppModule {}

  return NestFactory.createApplicationContext(BenchAppModule, { logger: false });
}

/** nestjs-db-locks' LockService; every benchmark client is an async loop over the one shared service. */
export function libraryContender(url: string): Contender {
  return {
    id: 'library',
    name: 'nestjs-db-locks LockService',
    async open(workload): Promise<ContenderSession> {
      const app = await bootApplication(url);
      try {
        const locks = app.get(LockService);
        for (const name of workload.names) {
          if (workload.readPermits !== 1) await locks.setLockPermits(name, 'read', workload.readPermits);
        }
        const retriesAtOpen = locks.getStats().retries;
        const client = {
          async attempt(group: BenchGroup): Promise<boolean> {
            const stamp = await locks.tryLocks(group);
            if (stamp === 0) return false;
            await locks.releaseLocks(stamp);
            return true;
          },
        };
        return {
          clients: Array.from({ length: workload.clients }, () => client),
          retries: () => locks.getStats().retries - retriesAtOpen,
          close: () => app.close(),
        };
      } catch (error) {
        await app.close();
        throw error;
      }
    },
  };
}
