import type { PrismaService } from './prisma.service.js';

/**
 * The tables of schema.prisma on PostgreSQL, with loans 1 (100000 cents) and 2 (50000) to try it on; docs/prisma.md
 * prints them. In an application of yours this is `prisma migrate`'s work; here SQL does it, because `prisma migrate`
 * runs Prisma's schema engine binary, which this project's machines cannot download (docs/prisma.md).
 */
export const LOAN_TABLES_SQL: readonly string[] = [
  'CREATE TABLE IF NOT EXISTS loans (id integer PRIMARY KEY, balance integer NOT NULL)',
  'CREATE TABLE IF NOT EXISTS repayments (id serial PRIMARY KEY, loan_id integer NOT NULL, amount integer NOT NULL)',
  'INSERT INTO loans (id, balance) VALUES (1, 100000), (2, 50000) ON CONFLICT (id) DO NOTHING',
];

/** Creates the tables of schema.prisma when missing (LOAN_TABLES_SQL). */
export async function createLoanTables(prisma: PrismaService): Promise<void> {
  for (const statement of LOAN_TABLES_SQL) await prisma.$executeRawUnsafe(statement);
}
