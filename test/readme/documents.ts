import { readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';

/** The repository's root folder. */
export const REPO_ROOT = resolve(import.meta.dirname, '../..');

/** The user documentation, as paths from the root: the README, the sample's README and every page of `docs/`. */
export const USER_DOCUMENTS: readonly string[] = [
  'README.md',
  'sample-app/README.md',
  ...readdirSync(join(REPO_ROOT, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`),
];
