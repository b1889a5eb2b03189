import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '../readme/documents.js';

const read = (path: string) => readFileSync(join(REPO_ROOT, path), 'utf8');

/**
 * The runners each page prints, in order, are the files with-locks-runner.spec.ts runs (printed-runners.ts imports
 * them from test/data-layers/runners/): a change to either side fails here until the other follows.
 */
const RUNNERS = [
  { page: 'docs/kysely.md', files: ['kysely.runner.ts'] },
  { page: 'docs/knex.md', files: ['knex.runner.ts'] },
  { page: 'docs/drizzle.md', files: ['drizzle.runner.ts'] },
  { page: 'docs/mikro-orm.md', files: ['mikro-orm.runner.ts'] },
  { page: 'docs/prisma.md', files: ['prisma.runner.ts'] },
  { page: 'docs/data-layers.md', files: ['pg.runner.ts', 'mysql2.runner.ts'] },
] as const;

/** The ```ts blocks of the page's "`@WithLocks` in your layer's transaction" section, each with its final newline. */
function printedRunners(page: string): string[] {
  const section = read(page).split("\n## `@WithLocks` in your layer's transaction\n")[1]?.split('\n## ')[0] ?? '';
  return [...section.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((match) => match[1]!);
}

describe.each(RUNNERS)('the runners of $page', ({ page, files }) => {
  it('are, block for block, the files of test/data-layers/runners/ that with-locks-runner.spec.ts runs', () => {
    expect(printedRunners(page)).toEqual(files.map((file) => read(`test/data-layers/runners/${file}`)));
  });

  it('implement LockTransactionRunner and send the fence with `execute`', () => {
    for (const code of printedRunners(page)) {
      expect(code).toMatch(/export class \w+Transactions implements LockTransactionRunner</);
      expect(code).toMatch(/\n {2}execute\(/);
    }
  });
});

it('with-locks-runner.spec.ts runs every runner file (printed-runners.ts imports each)', () => {
  const imported = [...read('test/data-layers/printed-runners.ts').matchAll(/from '\.\/runners\/([\w-]+\.runner)\.js'/g)].map((m) => `${m[1]}.ts`);
  expect(imported.sort()).toEqual(RUNNERS.flatMap(({ files }) => files).sort());
  expect(read('test/data-layers/with-locks-runner.spec.ts')).toContain('for (const layer of PRINTED_RUNNERS)');
});
