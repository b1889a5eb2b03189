import { Injectable } from '@nestjs/common';
import type {
  LockFenceStatement,
  LockTransactionIsolation,
  LockTransactionRunner,
  LockTransactionRunOptions,
} from 'nestjs-db-locks';
import type { Prisma } from '../generated/client.js';
import { PrismaService } from './prisma.service.js';

/** `transaction.isolation` as Prisma names it. */
const ISOLATION: Record<LockTransactionIsolation, Prisma.TransactionIsolationLevel> = {
  'READ UNCOMMITTED': 'ReadUncommitted',
  'READ COMMITTED': 'ReadCommitted',
  'REPEATABLE READ': 'RepeatableRead',
  SERIALIZABLE: 'Serializable',
};

/** Prisma's interactive transactions, for `@WithLocks({ transaction: { runner } })`: the fence is sent last, in `tx`. */
@Injectable()
export class PrismaLockTransactions implements LockTransactionRunner<Prisma.TransactionClient> {
  constructor(private readonly prisma: PrismaService) {}

  run<T>(work: (tx: Prisma.TransactionClient) => Promise<T>, options: LockTransactionRunOptions): Promise<T> {
    return this.prisma.$transaction(work, options.isolation ? { isolationLevel: ISOLATION[options.isolation] } : {});
  }

  execute(tx: Prisma.TransactionClient, s: LockFenceStatement): Promise<unknown> {
    return tx.$executeRawUnsafe(s.sql, ...s.params);
  }
}
