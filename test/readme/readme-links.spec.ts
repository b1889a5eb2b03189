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

const links = documents.flatMap((document) =>
  [...proseOf(document).matchAll(/\]\(([^)\s]+)\)/g)]
    .map((match) => match[1] ?? '')
    .filter((target) => !/^[a-z]+:/.test(target))
    .map((target) => [document, target] as const),
);

describe('documentation links', () => {
  it('finds the links of the README', () => {
    expect(links.filter(([document]) => document === 'README.md').length).toBeGreaterThanOrEqual(20);
  });

  it.each(links)('%s → %s', (document, target) => {
    const [path = '', anchor] = target.split('#');
    const file = path === '' ? document : relative(root, resolve(root, dirname(document), path));
    expect({ file, exists: existsSync(join(root, file)), shipped: isShipped(file) }).toEqual({
      file,
      exists: true,
      shipped: true,
    });
    if (anchor !== undefined) expect([...anchorsOf(file)]).toContain(anchor);
  });
});
