import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '../readme/documents.js';

const read = (path: string) => readFileSync(join(REPO_ROOT, path), 'utf8');

/**
 * The `execute` of each runner the docs print is the statement the runner specs send through that layer
 * (with-locks-runner.spec.ts runs every layer's transaction with the `execute` of its helper).
 */
const RUNNERS = [
  { page: 'docs/kysely.md', helper: 'test/data-layers/query-builders.ts', send: 'trx.executeQuery(CompiledQuery.raw(s.sql, [...s.params]))' },
  { page: 'docs/knex.md', helper: 'test/data-layers/query-builders.ts', send: 'trx.raw(s.positional.sql, [...s.positional.params] as never)' },
  { page: 'docs/drizzle.md', helper: 'test/data-layers/drizzle-layer.ts', send: 'tx.execute(fenceSql(s))' },
  { page: 'docs/mikro-orm.md', helper: 'test/data-layers/mikro-orm-layer.ts', send: "em.execute(s.positional.sql, [...s.positional.params], 'run')" },
  { page: 'docs/prisma.md', helper: 'test/data-layers/prisma-repayments.ts', send: 'tx.$executeRawUnsafe(s.sql, ...s.params)' },
  { page: 'docs/data-layers.md', helper: 'test/data-layers/query-builders.ts', send: 'connection.query(s.sql, [...s.params])' },
] as const;

describe.each(RUNNERS)('the runner of $page', ({ page, helper, send }) => {
  it('sends the fence as the runner specs send it through that layer', () => {
    const section = read(page).split("## `@WithLocks` in your layer's transaction")[1] ?? '';
    expect(section).toMatch(/implements LockTransactionRunner</);
    expect(section).toContain(`return ${send.replace(/^connection\./, 'client.')};`);
    expect(read(helper)).toContain(`execute: (s) => ${send.replace(/^connection\./, 'tx.connection.')}`);
  });
});
