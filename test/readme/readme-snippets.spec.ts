import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { REPO_ROOT as root, USER_DOCUMENTS as documents } from './documents.js';

/**
 * Every ```ts block of the user documentation is a complete module that compiles, with TypeScript's strict settings,
 * against the library's real types (`'nestjs-db-locks'` is this repository's `lib/`) and the installed Nest, TypeORM
 * and `@nestjs/config` packages. A snippet that stops compiling after an API change fails here, named by its file
 * and line.
 */

interface Snippet {
  /** `README.md:57`: the document and the line of the opening fence. */
  readonly where: string;
  /** The document and the line of the opening fence, apart. */
  readonly document: string;
  readonly fence: number;
  readonly code: string;
}

function snippetsOf(document: string): Snippet[] {
  const lines = readFileSync(join(root, document), 'utf8').split('\n');
  const found: Snippet[] = [];
  for (let i = 0; i < lines.length; i++) {
    if (!/^```(ts|typescript)\s*$/.test(lines[i] ?? '')) continue;
    const start = i;
    const body: string[] = [];
    for (i++; i < lines.length && !/^```\s*$/.test(lines[i] ?? ''); i++) body.push(lines[i] ?? '');
    found.push({ where: `${document}:${start + 1}`, document, fence: start + 1, code: body.join('\n') + '\n' });
  }
  return found;
}

const snippets = documents.flatMap(snippetsOf);
const outDir = join(root, 'build', 'readme-snippets');
const fileOf = (snippet: Snippet) => join(outDir, `${snippet.where.replace(/[/:.]/g, '_')}.ts`);

/** One program for all snippets (each its own module), type-checked once. */
function compile(): Map<string, string[]> {
  rmSync(outDir, { recursive: true, force: true });
  mkdirSync(outDir, { recursive: true });
  for (const snippet of snippets) writeFileSync(fileOf(snippet), snippet.code);
  const program = ts.createProgram(
    snippets.map(fileOf),
    {
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      lib: ['lib.es2023.d.ts', 'lib.dom.d.ts'],
      types: ['node'],
      strict: true,
      noUnusedLocals: true,
      noImplicitOverride: true,
      experimentalDecorators: true,
      emitDecoratorMetadata: true,
      skipLibCheck: true,
      noEmit: true,
      baseUrl: root,
      paths: { 'nestjs-db-locks': ['./lib/index.ts'], 'nestjs-db-locks/terminus': ['./lib/health/index.ts'] },
    },
  );
  const snippetOf = new Map(snippets.map((snippet) => [resolve(fileOf(snippet)), snippet]));
  const errors = new Map<string, string[]>();
  for (const diagnostic of ts.getPreEmitDiagnostics(program)) {
    const file = diagnostic.file?.fileName ?? '';
    const position =
      diagnostic.file && diagnostic.start !== undefined
        ? diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start)
        : undefined;
    const message = ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n');
    const snippet = snippetOf.get(resolve(file));
    // Named by the line of the document, e.g. `README.md:61`, so that the message points where to fix it.
    const at = snippet && position ? `${snippet.document}:${snippet.fence + 1 + position.line}` : relative(root, file);
    const list = errors.get(resolve(file)) ?? [];
    list.push(`${at}: TS${diagnostic.code} ${message}`);
    errors.set(resolve(file), list);
  }
  return errors;
}

describe('documentation snippets', () => {
  let errors: Map<string, string[]>;
  beforeAll(() => {
    errors = compile();
  });

  it('finds the snippets of the README (the Quick start first) and of the pages of docs/', () => {
    const readme = snippets.filter((snippet) => snippet.document === 'README.md');
    expect(readme.length).toBeGreaterThanOrEqual(3);
    expect(readme[0]?.code).toContain('class AppModule');
    expect(snippets.filter((snippet) => snippet.document.startsWith('docs/')).length).toBeGreaterThanOrEqual(10);
  });

  it.each(snippets.map((snippet) => [snippet.where, snippet] as const))('%s compiles', (_where, snippet) => {
    expect(errors.get(resolve(fileOf(snippet))) ?? []).toEqual([]);
  });

  it('leaves no error outside the snippets (the library and the packages they import type-check)', () => {
    const own = new Set(snippets.map((snippet) => resolve(fileOf(snippet))));
    expect([...errors].filter(([file]) => !own.has(file))).toEqual([]);
  });
});
