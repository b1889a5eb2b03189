import type { PrismaService } from './prisma.service.js';

/**
 * Creates the tables of schema.prisma when missing, with loans 1 (100000 cents) and 2 (50000) to try it on. In an
 * application of yours this is `prisma migrate deploy`'s work; here SQL does it, because `prisma migrate` runs
 * Prisma's schema engine binary, which this project's machines cannot download (docs/prisma.md).
 */
export async function createLoanTables(prisma: PrismaService): Promise<void> {
  await prisma.$executeRawUnsafe('CREATE TABLE IF NOT EXISTS loans (id integer PRIMARY KEY, balance integer NOT NULL)');
  await prisma.$executeRawUnsafe(
    'CREATE TABLE IF NOT EXISTS repayments (id serial PRIMARY KEY, loan_id integer NOT NULL, amount integer NOT NULL)',
  );
  await prisma.$executeRawUnsafe(
    'INSERT INTO loans (id, balance) VALUES (1, 100000), (2, 50000) ON CONFLICT (id) DO NOTHING',
  );
}
