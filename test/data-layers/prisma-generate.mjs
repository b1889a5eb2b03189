// Generates the Prisma clients of the Prisma fence specs (test/data-layers/prisma/*.prisma) into
// test/data-layers/prisma/generated/ (not committed). Run by `npm run typecheck` (and so `npm test`) before tsc.
//
// `prisma generate` itself needs no engine binary (Prisma 7 generates with WebAssembly, and the client runs its query
// compiler as WebAssembly too), but the CLI first makes sure the schema engine binary is present and downloads it from
// binaries.prisma.sh when it is not, which fails on a machine that reaches only the npm registry. Naming an existing
// file in PRISMA_SCHEMA_ENGINE_BINARY skips that download; `generate` never runs it (`migrate` would: not used here).
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../..', import.meta.url));
for (const schema of ['postgres', 'mysql']) {
  execFileSync(process.execPath, ['node_modules/prisma/build/index.js', 'generate', '--schema', `test/data-layers/prisma/${schema}.prisma`], {
    cwd: root,
    stdio: ['ignore', 'ignore', 'inherit'],
    env: {
      ...process.env,
      PRISMA_SCHEMA_ENGINE_BINARY: process.env.PRISMA_SCHEMA_ENGINE_BINARY ?? process.execPath,
      PRISMA_HIDE_UPDATE_MESSAGE: '1',
      CHECKPOINT_DISABLE: '1',
    },
  });
}
