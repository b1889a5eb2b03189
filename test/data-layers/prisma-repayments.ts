import { PrismaMariaDb } from '@prisma/adapter-mariadb';
import { PrismaPg } from '@prisma/adapter-pg';
import type { LockFence, LockTransactionRunner } from 'nestjs-db-locks';
import type { DataLayer, LayerWork } from './query-builders.js';
import type { TestDialect } from '../support/dialects.js';
import { PrismaClient as MysqlClient } from './prisma/generated/mysql/client.js';
import { type Prisma, PrismaClient } from '@prisma/client';

/** Where the Prisma fence specs pause a repayment: after it read the balance, and before it sends the fence. */
export interface RepaymentPauses {
  afterRead?: () => Promise<void>;
  beforeFence?: () => Promise<void>;
}

/**
 * Prisma 7 on the test database through its driver adapter: `@prisma/adapter-pg` on PostgreSQL (the client of the
 * `prisma-client-js` generator, imported from `@prisma/client` as docs/prisma.md does), `@prisma/adapter-mariadb` on
 * MariaDB (the `prisma-client` generator's, from its output folder). Both from test/data-layers/prisma/*.prisma, with
 * the same models.
 */
export function openPrisma(dialect: TestDialect, url: string): PrismaClient {
  if (dialect.name === 'PostgreSQL') return new PrismaClient({ adapter: new PrismaPg({ connectionString: url, max: 4 }) });
  const adapter = new PrismaMariaDb(url.replace(/^mysql:/, 'mariadb:'));
  return new MysqlClient({ adapter }) as unknown as PrismaClient; // the same models, on the other provider
}

/**
 * docs/prisma.md's repayment, with the spec's pauses: `cents` of loan `id` in one interactive `$transaction`,
 * computed from the balance it read, with the fence of `stamp` as its last statement (`LockFence.transaction`).
 */
export function repay(
  prisma: PrismaClient,
  fence: LockFence,
  stamp: number,
  id: number,
  cents: number,
  pauses: RepaymentPauses = {},
): Promise<void> {
  const runner: LockTransactionRunner<Prisma.TransactionClient> = {
    run: (work) => prisma.$transaction(work),
    execute: (tx, s) => tx.$executeRawUnsafe(s.sql, ...s.params),
  };
  return fence.transaction(stamp, runner, async (tx) => {
    const loan = await tx.loan.findUniqueOrThrow({ where: { id } });
    await pauses.afterRead?.();
    await tx.loan.update({ where: { id }, data: { balance: loan.balance - cents } });
    await tx.repayment.create({ data: { loanId: id, amount: cents } });
    await pauses.beforeFence?.(); // the fence follows, sent by LockFence.transaction
  });
}

/** The repayment's statements in a Prisma interactive transaction. */
export const prismaWork = (tx: Prisma.TransactionClient): LayerWork => ({
  insertRepayment: async (loan, amount) => void (await tx.repayment.create({ data: { loanId: loan, amount } })),
  balance: async (loan) => (await tx.loan.findUniqueOrThrow({ where: { id: loan } })).balance,
  setBalance: async (loan, balance) => void (await tx.loan.update({ where: { id: loan }, data: { balance } })),
  rows: (text) => tx.$queryRawUnsafe(text),
});

/** Prisma 7 (`openPrisma`) as a data layer of the fence specs: its interactive `$transaction`, the fence sent with `$executeRawUnsafe`. */
export const prismaLayer: DataLayer = {
  name: 'Prisma',
  open(dialect, url) {
    const prisma = openPrisma(dialect, url);
    return {
      transaction: (fn) => prisma.$transaction((tx) => fn({ ...prismaWork(tx), execute: (s) => tx.$executeRawUnsafe(s.sql, ...s.params) })),
      close: () => prisma.$disconnect(),
    };
  },
};
