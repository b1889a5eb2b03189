import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '../readme/documents.js';

const SAMPLE_FILES = ['prisma.service.ts', 'repayment.service.ts', 'loans.controller.ts', 'app.module.ts'];

/** A section of docs/prisma.md, from its heading to the next one. */
function sectionOf(page: string, heading: string): string {
  const start = page.indexOf(`\n## ${heading}\n`);
  if (start < 0) throw new Error(`docs/prisma.md has no section "${heading}"`);
  const end = page.indexOf('\n## ', start + 1);
  return page.slice(start, end < 0 ? undefined : end);
}

/** The fenced blocks of `lang` in `text`. */
const blocksOf = (text: string, lang: string): string[] =>
  [...text.matchAll(new RegExp(`^\`\`\`${lang}\\n([\\s\\S]*?)^\`\`\`$`, 'gm'))].map((match) => match[1]!);

/** A TypeScript file without its leading import statements (the page's block imports from packages instead). */
const withoutImports = (source: string): string => source.replace(/^(?:import[\s\S]*?;\n)+\n*/, '');

/**
 * The Prisma sample's code that docs/prisma.md prints is the sample's (sample-app/prisma/), which
 * prisma-sample.e2e.spec.ts runs: each of its files but main.ts and loan-tables.ts, without its imports, stands in the
 * page's TypeScript block as it is, and the page's schema is the sample's schema.prisma. The block itself compiles as a
 * module of its own (readme-snippets.spec.ts).
 */
describe('docs/prisma.md: the sample', () => {
  const section = sectionOf(readFileSync(join(REPO_ROOT, 'docs/prisma.md'), 'utf8'), "The sample: the Quick start's loan repayment on Prisma");
  const read = (path: string): string => readFileSync(join(REPO_ROOT, 'sample-app/prisma', path), 'utf8');

  it('prints one TypeScript block and one schema', () => {
    expect(blocksOf(section, 'ts')).toHaveLength(1);
    expect(blocksOf(section, 'prisma')).toHaveLength(1);
  });

  it.each(SAMPLE_FILES)('prints sample-app/prisma/src/%s as it is, but its imports', (file) => {
    const body = withoutImports(read(`src/${file}`));
    expect(body.length).toBeGreaterThan(200);
    expect(blocksOf(section, 'ts')[0]).toContain(body);
  });

  it('prints the fenced $transaction the sample runs, the fence last', () => {
    const repay = read('src/repayment.service.ts');
    for (const line of [
      '@WithLocks({ locks: (loanId: number) => [`loan:${loanId}_WRITE`], retryAfterSeconds: 1 })',
      'return this.fence.transaction(stamp, (fenced) =>',
      'this.prisma.$transaction(async (tx) => {',
      'await fenced((s) => tx.$executeRawUnsafe(s.sql, ...s.params)); // last',
    ]) {
      expect(repay).toContain(line);
    }
  });

  it('prints sample-app/prisma/schema.prisma as it is', () => {
    expect(blocksOf(section, 'prisma')[0]).toBe(read('schema.prisma'));
  });
});
