import { Injectable } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import {
  InvalidLockArgumentError,
  Leader,
  LeaderService,
  LockConfigurationError,
  LockShutdownError,
  LockTestingModule,
  type LeaderTerm,
} from 'nestjs-db-locks';
import { until } from '../support/until.js';

const told: string[] = [];

@Injectable()
class Consumer {
  @Leader('consumer')
  async consume(signal: AbortSignal, term: LeaderTerm): Promise<void> {
    told.push(`start ${term.role} ${term.token}`);
    await new Promise((resolve) => signal.addEventListener('abort', resolve));
    told.push(`stop ${(signal.reason as Error).name}`);
  }
}

@Injectable()
class SecondConsumer {
  @Leader('consumer')
  consume(): void {}
}

describe('@Leader', () => {
  it('refuses an invalid role or option when the class is defined', () => {
    const define = (role: unknown, options?: unknown) => () => {
      class Worker {
        work(): void {}
      }
      Leader(role as string, options as never)(Worker.prototype, 'work', Object.getOwnPropertyDescriptor(Worker.prototype, 'work')!);
    };
    expect(define('billing')).not.toThrow();
    expect(define('')).toThrow(InvalidLockArgumentError);
    expect(define(42)).toThrow(InvalidLockArgumentError);
    expect(define('tab\there')).toThrow(InvalidLockArgumentError);
    expect(define('trailing ')).toThrow(InvalidLockArgumentError);
    expect(define('x'.repeat(193))).not.toThrow();
    expect(define('x'.repeat(194))).toThrow(/at most 193 bytes/);
    expect(define('billing', { rejoinDelayMs: 1.5 })).toThrow(/rejoinDelayMs/);
    expect(define('billing', { rejoin: 5 })).toThrow(InvalidLockArgumentError);
    expect(define('billing', 'fast')).toThrow(InvalidLockArgumentError);
  });

  it('runs the decorated method of a provider while the application leads, and tells it at app.close()', async () => {
    const moduleRef = await Test.createTestingModule({ imports: [LockTestingModule.forRoot()], providers: [Consumer] }).compile();
    moduleRef.useLogger(false);
    const app = await moduleRef.init();
    await until(() => app.get(LeaderService).isLeader('consumer'));
    expect(app.get(LeaderService).roles()).toEqual(['consumer']);
    await app.close();
    expect(told).toEqual(['start consumer 1', `stop ${LockShutdownError.name}`]);
  });

  it('refuses two methods of one role in one application at start-up', async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [LockTestingModule.forRoot()],
      providers: [Consumer, SecondConsumer],
    }).compile();
    moduleRef.useLogger(false);
    await expect(moduleRef.init()).rejects.toThrow(LockConfigurationError);
    await expect(moduleRef.close()).resolves.toBeUndefined();
  });
});
