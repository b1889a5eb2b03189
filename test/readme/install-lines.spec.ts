import { builtinModules } from 'node:module';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT as root, USER_DOCUMENTS } from './documents.js';

/**
 * The install lines of the user documentation agree with package.json and with each other. The lines are read from
 * the pages as printed: every `npm install` line of a ```bash block, and every `npm install nestjs-db-locks …` in
 * running text (the README's line for an application without TypeORM).
 */

interface Manifest {
  peerDependencies: Record<string, string>;
  peerDependenciesMeta: Record<string, { optional?: boolean }>;
  devDependencies: Record<string, string>;
}
const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as Manifest;
const peers = Object.keys(manifest.peerDependencies);
const optional = (name: string): boolean => manifest.peerDependenciesMeta[name]?.optional === true;
/** Every package a line may name: the library, its peers, and the packages this repository tests it with. */
const known = new Set(['nestjs-db-locks', ...peers, ...Object.keys(manifest.devDependencies)]);
/** What any Nest application has already (`nest new`), so an install line need not name it. */
const NEST_APP = new Set(['@nestjs/common', '@nestjs/core', 'reflect-metadata', 'rxjs']);
/** The database drivers of the library's own connection: one of them must be named. */
const DRIVERS = ['pg', 'mysql2'];

/** The pages for applications with no TypeORM of their own. */
const WITHOUT_TYPEORM = ['docs/data-layers.md', 'docs/prisma.md', 'docs/drizzle.md', 'docs/kysely.md', 'docs/knex.md', 'docs/mikro-orm.md'];

interface InstallLine {
  readonly document: string;
  readonly text: string;
  /** The packages the line installs. */
  readonly packages: string[];
  /** The packages its comment offers instead (`# or mysql2 instead of pg`). */
  readonly alternatives: string[];
}

const read = (document: string): string => readFileSync(join(root, document), 'utf8');
const blocksOf = (text: string, lang: string): string[] =>
  [...text.matchAll(new RegExp(`^\`\`\`${lang}\\n([\\s\\S]*?)^\`\`\`$`, 'gm'))].map((match) => match[1]!);

function parse(document: string, text: string): InstallLine {
  const [command = '', comment = ''] = text.split(/\s#\s/, 2);
  const packages = command
    .trim()
    .split(/\s+/)
    .slice(2)
    .filter((word) => !word.startsWith('-'));
  const alternatives = (comment.match(/@?[\w.-]+(?:\/[\w.-]+)?/g) ?? []).filter((word) => known.has(word));
  return { document, text, packages, alternatives };
}

/** The install lines of `document` that name packages, ```bash blocks first. */
function installLinesOf(document: string): InstallLine[] {
  const text = read(document);
  const inBlocks = blocksOf(text, 'bash')
    .flatMap((block) => block.split('\n'))
    .filter((line) => /^npm (install|i) \S/.test(line) && !/^npm install\s*&&/.test(line));
  const inText = [...text.replace(/^```[\s\S]*?^```$/gm, '').matchAll(/`(npm install nestjs-db-locks [^`]+)`/g)].map((m) => m[1]!);
  return [...inBlocks, ...inText].map((line) => parse(document, line));
}

/** The library's install line of `document` (the one naming `nestjs-db-locks`; README: `which` of its two). */
function libraryLines(document: string): InstallLine[] {
  return installLinesOf(document).filter((line) => line.packages.includes('nestjs-db-locks'));
}

/** The packages the ```ts blocks of `document` import, by package name (`drizzle-orm/mysql2` → `drizzle-orm`). */
function importedPackages(document: string): Set<string> {
  const names = new Set<string>();
  for (const block of blocksOf(read(document), 'ts')) {
    for (const [, specifier] of block.matchAll(/^import\s[\s\S]*?from '([^']+)';/gm)) {
      if (specifier!.startsWith('.') || specifier!.startsWith('node:') || builtinModules.includes(specifier!)) continue;
      const parts = specifier!.split('/');
      names.add(specifier!.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]!);
    }
  }
  return names;
}

describe('the install lines of the documentation', () => {
  const lines = USER_DOCUMENTS.flatMap(libraryLines);

  it('are found: one in each page for another data layer, two in the README (with TypeORM, and without)', () => {
    for (const page of WITHOUT_TYPEORM) expect(libraryLines(page)).toHaveLength(1);
    expect(libraryLines('README.md')).toHaveLength(2);
  });

  it('name packages that exist: the library, its peers, or a package this repository tests it with', () => {
    for (const line of USER_DOCUMENTS.flatMap(installLinesOf)) {
      expect({ line: line.text, unknown: [...line.packages, ...line.alternatives].filter((name) => !known.has(name)) }).toEqual({
        line: line.text,
        unknown: [],
      });
    }
  });

  it('name a database driver, an optional peer that npm does not install by itself, and offer the other', () => {
    for (const driver of DRIVERS) expect(optional(driver)).toBe(true);
    for (const line of lines) {
      const named = DRIVERS.filter((driver) => line.packages.includes(driver));
      expect({ line: line.text, named }).toEqual({ line: line.text, named: [expect.any(String)] });
      expect(line.alternatives).toContain(DRIVERS.find((driver) => driver !== named[0]));
    }
  });

  it('without TypeORM of the application: name neither typeorm nor @nestjs/typeorm, peers that npm 7+ installs', () => {
    for (const name of ['typeorm', '@nestjs/typeorm']) {
      expect(peers).toContain(name);
      expect(optional(name)).toBe(false);
    }
    const withoutTypeOrm = [...WITHOUT_TYPEORM.flatMap(libraryLines), libraryLines('README.md')[1]!];
    for (const line of withoutTypeOrm) {
      expect({ line: line.text, typeorm: line.packages.filter((name) => name.includes('typeorm')) }).toEqual({ line: line.text, typeorm: [] });
    }
  });

  it('without TypeORM of the application: name the same peers of the library on every page and in the README', () => {
    const peersOf = (line: InstallLine) => line.packages.filter((name) => peers.includes(name));
    const readme = libraryLines('README.md')[1]!;
    expect(peersOf(readme)).toEqual(['@nestjs/schedule', 'pg']);
    for (const page of WITHOUT_TYPEORM) {
      expect({ page, peers: peersOf(libraryLines(page)[0]!) }).toEqual({ page, peers: peersOf(readme) });
    }
  });

  it('say so in the words of the README: the TypeORM packages come as peer dependencies, never imported by your code', () => {
    for (const document of ['README.md', ...WITHOUT_TYPEORM]) {
      const text = read(document).replace(/\s+/g, ' ');
      expect({ document, says: /`typeorm` and `@nestjs\/typeorm` [^.]*peer dependencies, which npm \(7 and later\) installs with it/.test(text) }).toEqual({
        document,
        says: true,
      });
      expect({ document, says: text.includes('your code never imports them') || text.includes('Your code never imports them') }).toEqual({ document, says: true });
    }
  });

  it("name every package the page's code imports, but those any Nest application has, and no peer it installs by itself", () => {
    const quickStart = libraryLines('README.md')[0]!;
    const cases = [
      ...WITHOUT_TYPEORM.map((page) => ({ page, imported: importedPackages(page), installed: installLinesOf(page) })),
      // The README's Quick start: its first block, an application on TypeORM.
      { page: 'README.md', imported: new Set(importedOfBlock(blocksOf(read('README.md'), 'ts')[0]!)), installed: [quickStart] },
    ];
    for (const { page, imported, installed } of cases) {
      const offered = new Set(installed.flatMap((line) => [...line.packages, ...line.alternatives]));
      const missing = [...imported].filter((name) => name !== 'nestjs-db-locks' && !NEST_APP.has(name) && !offered.has(name));
      expect({ page, missing }).toEqual({ page, missing: [] });
      // A peer npm installs by itself is named only when the code imports it (as ScheduleModule, or TypeORM's).
      const needless = installed
        .flatMap((line) => line.packages)
        .filter((name) => peers.includes(name) && !optional(name) && !imported.has(name));
      expect({ page, needless }).toEqual({ page, needless: [] });
    }
  });
});

/** The packages one TypeScript block imports. */
function importedOfBlock(block: string): string[] {
  return [...block.matchAll(/^import\s[\s\S]*?from '([^']+)';/gm)]
    .map(([, specifier]) => specifier!)
    .filter((specifier) => !specifier.startsWith('.') && !specifier.startsWith('node:'))
    .map((specifier) => (specifier.startsWith('@') ? specifier.split('/').slice(0, 2) : specifier.split('/').slice(0, 1)).join('/'));
}
