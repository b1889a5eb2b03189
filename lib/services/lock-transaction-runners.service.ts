import { Injectable } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { LockConfigurationError } from '../errors/index.js';
import { LockFence } from '../fence/lock-fence.service.js';
import type { LockFenceStatement } from '../fence/lock-fence.interface.js';
import type { LockTransactionRunner, LockTransactionRunnerToken } from '../interfaces/index.js';
import type { ResolvedLockTransaction } from '../utils/resolve-with-locks-options.util.js';

/**
 * The runners of `@WithLocks({ transaction: { runner } })`: each token looked up once among the application's
 * providers, checked to be a `LockTransactionRunner`, and remembered; and the fence of a runner's transaction.
 * @internal
 */
@Injectable()
export class LockTransactionRunners {
  private readonly resolved = new Map<unknown, LockTransactionRunner>();

  constructor(
    private readonly moduleRef: ModuleRef,
    /** In `LockTestingModule`, `MemoryLockFence`: the grants are checked in memory, nothing is sent through `execute`. */
    private readonly lockFence: LockFence,
  ) {}

  /**
   * Checks a fenced transaction's settings at start-up (and at a `LockService.withLocks` call): a runner with a
   * `dataSource`, or a token that names no runner, is refused.
   * @throws LockConfigurationError naming what to change.
   */
  verify(target: string, transaction: ResolvedLockTransaction): void {
    if (transaction.runner === undefined) return;
    if (transaction.dataSource !== undefined) {
      throw new LockConfigurationError(
        `@WithLocks ${target} names both transaction.runner and transaction.dataSource: a runner opens the transaction ` +
          `in its own data layer, a dataSource in TypeORM. Keep one of them`,
      );
    }
    this.get(target, transaction.runner);
  }

  /**
   * The runner named by `token`.
   * @throws LockConfigurationError when no provider is registered under `token`, or when it is not a runner.
   */
  get(target: string, token: LockTransactionRunnerToken): LockTransactionRunner {
    let runner = this.resolved.get(token);
    if (runner) return runner;
    const value = isRunner(token) ? token : this.lookUp(target, token);
    if (!isRunner(value)) {
      throw new LockConfigurationError(
        `@WithLocks ${target}: transaction.runner ${runnerTokenName(token)} is not a LockTransactionRunner: it needs ` +
          'run(work, options) (opens a transaction, runs work in it, commits) and execute(tx, statement) ' +
          '(sends a statement in that transaction)',
      );
    }
    runner = value;
    this.resolved.set(token, runner);
    return runner;
  }

  /**
   * The runner of one call, checked as at start-up; before anything is taken.
   * @throws LockConfigurationError as `verify`.
   */
  forCall(target: string, transaction: ResolvedLockTransaction): LockTransactionRunner {
    this.verify(target, transaction);
    return this.get(target, transaction.runner!);
  }

  /**
   * Sends the fence of every stamp (in order) through `runner` inside `tx`; throws `LockLostError` for a lost one. In
   * `LockTestingModule` each grant is checked in memory instead (`MemoryLockFence`), at the same point.
   */
  async fence(runner: LockTransactionRunner, tx: unknown, stamps: readonly number[]): Promise<void> {
    await this.lockFence.fenceEach(stamps, (statement: LockFenceStatement) => runner.execute(tx, statement), true);
  }

  /**
   * Marks `tx`, first thing in it, as the transaction the fences of `stamp`'s call must run in (`LockFence.markTransaction`),
   * through `runner`: a runner whose `execute` sends elsewhere has its fences refused.
   */
  async mark(runner: LockTransactionRunner, tx: unknown, stamp: number): Promise<void> {
    await this.lockFence.markTransaction(stamp, (statement: LockFenceStatement) => runner.execute(tx, statement));
  }

  private lookUp(target: string, token: LockTransactionRunnerToken): unknown {
    try {
      return this.moduleRef.get(token as string, { strict: false });
    } catch (error) {
      throw new LockConfigurationError(
        `@WithLocks ${target}: transaction.runner ${runnerTokenName(token)} is not a provider of the application: add it to ` +
          "the providers of a module (e.g. the one that declares the method's class)",
        { cause: error },
      );
    }
  }
}

function isRunner(value: unknown): value is LockTransactionRunner {
  const candidate = value as Partial<LockTransactionRunner> | null;
  return (
    typeof candidate === 'object' &&
    candidate !== null &&
    typeof candidate.run === 'function' &&
    typeof candidate.execute === 'function'
  );
}

/** How messages name a runner's token. @internal */
export function runnerTokenName(token: unknown): string {
  if (typeof token === 'function') return token.name || 'an anonymous class';
  if (typeof token === 'string') return `'${token}'`;
  if (typeof token === 'symbol') return token.toString();
  return String(token);
}
