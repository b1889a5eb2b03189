import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { REPO_ROOT as root, USER_DOCUMENTS as documents } from './documents.js';

/**
 * Every link of the user documentation leads somewhere: a relative link names a file of the repository that the
 * package ships too (so it also works in `node_modules/nestjs-db-locks/` and on the registry's page once relative
 * links are resolved against the repository), and an anchor names a heading of its page, slugged as GitHub and npm
 * slug them.
 */
const shipped = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { files: string[] };

/** The text of `document` without its fenced code blocks (whose brackets are code, not links). */
function proseOf(document: string): string {
  return readFileSync(join(root, document), 'utf8').replace(/^```[\s\S]*?^```\s*$/gm, '');
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, '')
    .replace(/ /g, '-');
}

function anchorsOf(document: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const [, heading] of proseOf(document).matchAll(/^#{1,6} (.+)$/gm)) {
    const base = slug(heading ?? '');
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count === 0 ? base : `${base}-${count}`);
  }
  return anchors;
}

function isShipped(path: string): boolean {
  return shipped.files.some((entry) =>
    entry.includes('*')
      ? new RegExp(`^${entry.replace(/\./g, '\\.').replace(/\*/g, '[^/]*')}$`).test(path)
      : path === entry || path.startsWith(`${entry}/`),
  );
}

/** The relative links of `document` that lead nowhere, each with why. */
function brokenLinksOf(document: string): string[] {
  const broken: string[] = [];
  for (const [, target = ''] of proseOf(document).matchAll(/\]\(([^)\s]+)\)/g)) {
    if (/^[a-z]+:/.test(target)) continue;
    const [path = '', anchor] = target.split('#');
    const file = path === '' ? document : relative(root, resolve(root, dirname(document), path));
    if (!existsSync(join(root, file))) broken.push(`${target}: no file ${file}`);
    else if (!isShipped(file)) broken.push(`${target}: ${file} is not in the package ("files" of package.json)`);
    else if (anchor !== undefined && !anchorsOf(file).has(anchor)) broken.push(`${target}: no heading #${anchor}`);
  }
  return broken;
}

describe('documentation links', () => {
  it('finds the links of the README', () => {
    expect([...proseOf('README.md').matchAll(/\]\(([^)\s]+)\)/g)].length).toBeGreaterThanOrEqual(20);
  });

  it.each(documents)('%s: every relative link leads to a shipped file and an existing heading', (document) => {
    expect(brokenLinksOf(document)).toEqual([]);
  });
});
