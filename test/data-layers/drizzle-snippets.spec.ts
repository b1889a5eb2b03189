import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '../readme/documents.js';

/** The Drizzle code the fence specs run (drizzle-layer.ts) is the code docs/drizzle.md prints. */
describe('docs/drizzle.md', () => {
  const page = readFileSync(join(REPO_ROOT, 'docs/drizzle.md'), 'utf8');
  const layer = readFileSync(join(REPO_ROOT, 'test/data-layers/drizzle-layer.ts'), 'utf8');

  it('prints the fenceSql of the Drizzle layer the fence specs run', () => {
    const declaration = /\/\*\* The fence as Drizzle SQL[^\n]*\nconst fenceSql[^\n]*\n[^\n]*\n/.exec(layer)?.[0];
    expect(declaration).toBeDefined();
    expect(page).toContain(declaration!);
  });

  it('sends the fence through tx.execute as the spec does', () => {
    expect(layer.match(/execute: \(s\) => tx\.execute\(fenceSql\(s\)\) \}/g)).toHaveLength(2);
    expect(page).toContain('execute: (tx, s) => tx.execute(fenceSql(s)),');
    expect(page).toContain('(s) => tx.execute(fenceSql(s))');
  });
});
