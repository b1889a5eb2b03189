import type { LoggerService, Type } from '@nestjs/common';
import { Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { LockService } from 'nestjs-db-locks';
import { lockAppImports, type LockApp, type TestLockOptions } from './lock-app.js';

/** The log lines of one application, by level. */
export class CapturedLog implements LoggerService {
  readonly lines: Array<{ level: string; message: string }> = [];
  log(message: unknown) {
    this.lines.push({ level: 'log', message: String(message) });
  }
  warn(message: unknown) {
    this.lines.push({ level: 'warn', message: String(message) });
  }
  error(message: unknown) {
    this.lines.push({ level: 'error', message: String(message) });
  }
  /** The messages that match `pattern`. */
  matching(pattern: RegExp): string[] {
    return this.lines.filter((line) => pattern.test(line.message)).map((line) => line.message);
  }
}

/** `createLockApp`, with the application's log lines captured. */
export async function createLoggedLockApp(
  url: string,
  options: TestLockOptions,
  poolSize = 4,
  providers: Type[] = [],
): Promise<LockApp & { log: CapturedLog }> {
  @Module({ imports: lockAppImports(url, options, poolSize), providers })
  class LoggedAppModule {}

  const log = new CapturedLog();
  const moduleRef = await Test.createTestingModule({ imports: [LoggedAppModule] }).compile();
  moduleRef.useLogger(log);
  const app = await moduleRef.init();
  return { app, locks: app.get(LockService), close: () => app.close(), log };
}
