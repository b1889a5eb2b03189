import { type INestApplicationContext, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ScheduleModule } from '@nestjs/schedule';
import { TypeOrmModule } from '@nestjs/typeorm';
import { LockModule, type LockModuleOptions, LockService } from 'nestjs-db-locks';
import type { BenchGroup, Workload } from '../workloads.js';
import type { Contender, ContenderId, ContenderSession } from './contender.js';

/** Connections of the application's pool, as many as the raw contenders' dedicated clients in W2. */
export const POOL_MAX = 16;

/**
 * Boots a Nest application context the way a user wires the library: on PostgreSQL, or on MariaDB/MySQL for a
 * `mysql://` URL (`dialect: 'mysql'`, UTC times, one more pool connection for the instance session).
 */
export async function bootApplication(
  url: string,
  appId = 'bench',
  options: Partial<LockModuleOptions> = {},
): Promise<INestApplicationContext> {
  const mysql = url.startsWith('mysql:');
  @Module({
    imports: [
      mysql
        ? TypeOrmModule.forRoot({ type: 'mariadb', url, timezone: 'Z', extra: { connectionLimit: POOL_MAX + 1 } })
        : TypeOrmModule.forRoot({ type: 'postgres', url, extra: { max: POOL_MAX } }),
      ScheduleModule.forRoot(),
      LockModule.forRoot(mysql ? { ...options, appId, dialect: 'mysql' } : { ...options, appId }),
    ],
  })
  class BenchAppModule {}

  return NestFactory.createApplicationContext(BenchAppModule, { logger: false });
}

/** A variant of the library contender: its id, its name and its module options. */
export interface LibraryVariant {
  readonly id: Extract<ContenderId, `library${string}`>;
  readonly name: string;
  readonly options: Partial<LockModuleOptions>;
}

/** The library with its default options. */
const DEFAULT_VARIANT: LibraryVariant = { id: 'library', name: 'nestjs-db-locks LockService', options: {} };

/** The part of a `LockService` the workloads call (this build's, or a baseline build's: `baseline.contender.ts`). */
export interface BenchLockService {
  tryLocks(group: BenchGroup): Promise<number>;
  releaseLocks(stamp: number): Promise<void>;
  setLockPermits(name: string, mode: 'read', permits: number): Promise<void>;
  getStats(): { retries: number };
}

/**
 * A session of `workload` on a booted application's `locks`: the workload's read permits set, every client an async
 * loop over the one service, `close` closing the application (also when the set-up fails).
 */
export async function lockServiceSession(
  locks: BenchLockService,
  workload: Workload,
  close: () => Promise<void>,
): Promise<ContenderSession> {
  try {
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
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}

/** nestjs-db-locks' LockService; every benchmark client is an async loop over the one shared service. */
export function libraryContender(url: string, variant: LibraryVariant = DEFAULT_VARIANT): Contender {
  return {
    id: variant.id,
    name: variant.name,
    async open(workload): Promise<ContenderSession> {
      const app = await bootApplication(url, 'bench', variant.options);
      return lockServiceSession(app.get(LockService), workload, () => app.close());
    },
  };
}
