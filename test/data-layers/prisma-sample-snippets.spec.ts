import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT } from '../readme/documents.js';
import { LOAN_TABLES_SQL } from '../../sample-app/prisma/src/loan-tables.js';

const SAMPLE_FILES = ['prisma.service.ts', 'prisma-lock-transactions.ts', 'repayment.service.ts', 'loans.controller.ts', 'app.module.ts'];

const page = readFileSync(join(REPO_ROOT, 'docs/prisma.md'), 'utf8');

/** A section of docs/prisma.md, from its heading to the next one. */
function sectionOf(heading: string): string {
  const start = page.indexOf(`\n## ${heading}\n`);
  if (start < 0) throw new Error(`docs/prisma.md has no section "${heading}"`);
  const end = page.indexOf('\n## ', start + 1);
  return page.slice(start, end < 0 ? undefined : end);
}

/** The fenced blocks of `text`, in order, as `{ lang, code }`. */
const fencedBlocks = (text: string): { lang: string; code: string }[] =>
  [...text.matchAll(/^```(\w*)\n([\s\S]*?)^```$/gm)].map((match) => ({ lang: match[1]!, code: match[2]! }));

/** The fenced blocks of `lang` in `text`. */
const blocksOf = (text: string, lang: string): string[] => fencedBlocks(text).filter((b) => b.lang === lang).map((b) => b.code);

/** A TypeScript file without its leading import statements (the page's block imports from packages instead). */
const withoutImports = (source: string): string => source.replace(/^(?:import[\s\S]*?;\n)+\n*/, '');

const read = (path: string): string => readFileSync(join(REPO_ROOT, 'sample-app/prisma', path), 'utf8');

/**
 * The Prisma sample's code that docs/prisma.md prints is the sample's (sample-app/prisma/), which
 * prisma-sample.e2e.spec.ts runs: each of its files but main.ts and loan-tables.ts, without its imports, stands in the
 * page's TypeScript block as it is. The block itself compiles as a module of its own (readme-snippets.spec.ts).
 */
describe('docs/prisma.md: the sample', () => {
  const section = sectionOf("The sample: the Quick start's loan repayment on Prisma");

  it('prints one TypeScript block, and no schema of its own (the steps print it)', () => {
    expect(blocksOf(section, 'ts')).toHaveLength(1);
    expect(blocksOf(section, 'prisma')).toHaveLength(0);
  });

  it.each(SAMPLE_FILES)('prints sample-app/prisma/src/%s as it is, but its imports', (file) => {
    const body = withoutImports(read(`src/${file}`));
    expect(body.length).toBeGreaterThan(200);
    expect(blocksOf(section, 'ts')[0]).toContain(body);
  });

  it('prints the repayment the sample runs: in the runner its @WithLocks names, the fence sent by the runner', () => {
    const repay = read('src/repayment.service.ts');
    for (const line of [
      'transaction: { runner: PrismaLockTransactions },',
      'const tx = this.locks.currentTransaction(PrismaLockTransactions);',
    ]) {
      expect(repay).toContain(line);
    }
    expect(repay).not.toContain('currentLock()');
    expect(read('src/prisma-lock-transactions.ts')).toContain('return tx.$executeRawUnsafe(s.sql, ...s.params);');
    expect(read('src/app.module.ts')).toContain('PrismaLockTransactions');
  });
});

/**
 * The set-up steps of docs/prisma.md print, in order, what a new application needs: the install line, the schema, the
 * prisma.config.ts, `npx prisma generate`, the tables' SQL, the lock tables. The files are the sample's (the schema and
 * config its client is generated with, by prisma-generate.mjs; the SQL its main.ts runs), and the generate command
 * runs as printed in a folder laid out as the steps say.
 */
describe('docs/prisma.md: setting up, step by step', () => {
  const steps = sectionOf('Setting up, step by step');
  const blocks = fencedBlocks(steps);

  it('prints the install lines, the schema, prisma.config.ts, prisma generate, the SQL and the lock tables, in order', () => {
    expect(blocks.map((b) => b.lang)).toEqual(['bash', 'prisma', 'ts', 'bash', 'sql', 'bash']);
    expect(blocks[0]!.code).toMatch(/^npm install nestjs-db-locks .*\nnpm install -D prisma\n$/);
    expect(blocks[3]!.code).toBe('npx prisma generate\n');
    expect(blocks[5]!.code).toBe('npx nestjs-db-locks migrate --url "$DATABASE_URL"\n');
  });

  it("prints the sample's schema.prisma as it is", () => {
    expect(blocks[1]!.code).toBe(read('schema.prisma'));
  });

  it("prints the sample's prisma.config.ts as it is, the config its client is generated with", () => {
    expect(blocks[2]!.code).toBe(read('prisma.config.ts'));
    const generate = readFileSync(join(REPO_ROOT, 'test/data-layers/prisma-generate.mjs'), 'utf8');
    expect(generate).toContain("['sample-app/prisma/schema.prisma', 'sample-app/prisma/prisma.config.ts']");
  });

  it('prints the SQL the sample creates its tables with (loan-tables.ts)', () => {
    expect(blocks[4]!.code).toBe(LOAN_TABLES_SQL.map((statement) => `${statement};\n`).join(''));
  });

  it("prints a prisma.config.ts that gives Prisma's command line the database URL of DATABASE_URL", async () => {
    const before = process.env.DATABASE_URL;
    process.env.DATABASE_URL = 'postgres://app:secret@db.example:5432/app';
    try {
      const config = (await import('../../sample-app/prisma/prisma.config.js')).default as { datasource?: { url?: string } };
      expect(config.datasource?.url).toBe('postgres://app:secret@db.example:5432/app');
    } finally {
      if (before === undefined) delete process.env.DATABASE_URL;
      else process.env.DATABASE_URL = before;
    }
  });

  it('generates the client as printed: prisma.config.ts beside package.json, prisma/schema.prisma, `npx prisma generate`', () => {
    const project = mkdtempSync(join(tmpdir(), 'ndl-prisma-steps-'));
    try {
      symlinkSync(join(REPO_ROOT, 'node_modules'), join(project, 'node_modules'), 'dir');
      writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'loans', private: true, type: 'module' }));
      writeFileSync(join(project, 'prisma.config.ts'), blocks[2]!.code);
      mkdirSync(join(project, 'prisma'));
      writeFileSync(join(project, 'prisma', 'schema.prisma'), blocks[1]!.code);
      const run = spawnSync('sh', ['-c', blocks[3]!.code], {
        cwd: project,
        encoding: 'utf8',
        timeout: 90_000,
        env: {
          ...process.env,
          // This project's machines cannot download Prisma's schema engine, which `generate` checks for but never
          // runs: any existing file passes the check (docs/prisma.md, "What runs on this project's machines").
          PRISMA_SCHEMA_ENGINE_BINARY: process.execPath,
          PRISMA_HIDE_UPDATE_MESSAGE: '1',
          CHECKPOINT_DISABLE: '1',
          npm_config_update_notifier: 'false',
        },
      });
      const output = `${run.stdout}${run.stderr}`;
      expect({ status: run.status, output }).toEqual({ status: 0, output: expect.stringContaining('Generated Prisma Client') });
      expect(output).toContain('Loaded Prisma config from prisma.config.ts');
      expect(output).toContain('Prisma schema loaded from prisma/schema.prisma');
      expect(existsSync(join(project, 'prisma', 'generated', 'client.ts'))).toBe(true);
    } finally {
      rmSync(project, { recursive: true, force: true });
    }
  }, 120_000);
});
