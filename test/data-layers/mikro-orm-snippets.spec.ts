import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '../readme/documents.js';

/** The MikroORM code the fence specs run (mikro-orm-layer.ts) is the code docs/mikro-orm.md prints. */
describe('docs/mikro-orm.md', () => {
  const page = readFileSync(join(REPO_ROOT, 'docs/mikro-orm.md'), 'utf8');
  const layer = readFileSync(join(REPO_ROOT, 'test/data-layers/mikro-orm-layer.ts'), 'utf8');

  it('flushes before the fence, as the spec does', () => {
    expect(layer).toContain('await em.flush(); // before the fence');
    expect(page).toContain('await em.flush(); // before the fence');
  });

  it("sends the fence through the transaction's em.execute as the spec does", () => {
    const execute = "(s) => em.execute(s.positional.sql, [...s.positional.params], 'run')";
    expect(layer).toContain(`execute: ${execute} })`);
    expect(page).toContain("execute: (em, s) => em.execute(s.positional.sql, [...s.positional.params], 'run'),");
  });
});
