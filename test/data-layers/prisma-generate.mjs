// Generates the Prisma clients (not committed) of the Prisma fence specs (test/data-layers/prisma/*.prisma, into
// node_modules/.prisma/client and test/data-layers/prisma/generated/) and of the Prisma sample
// (sample-app/prisma/schema.prisma, into sample-app/prisma/generated/). Run before tsc by `npm run typecheck` (and so
// `npm test`) and by `npm run build:tools` (and so `npm start`, `npm run start:prisma`, `npm run bench`).
//
// `prisma generate` itself needs no engine binary (Prisma 7 generates with WebAssembly, and the client runs its query
// compiler as WebAssembly too), but the CLI first makes sure the schema engine binary is present and downloads it from
// binaries.prisma.sh when it is not, which fails on a machine that reaches only the npm registry. Naming an existing
// file in PRISMA_SCHEMA_ENGINE_BINARY skips that download; `generate` never runs it (`migrate` would: not used here).
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../..', import.meta.url));
// Each schema, with the prisma.config.ts beside it if any (the sample's, which docs/prisma.md prints).
const schemas = [
  ['test/data-layers/prisma/postgres.prisma'],
  ['test/data-layers/prisma/mysql.prisma'],
  ['sample-app/prisma/schema.prisma', 'sample-app/prisma/prisma.config.ts'],
];
for (const [schema, config] of schemas) {
  const args = ['node_modules/prisma/build/index.js', 'generate', '--schema', schema, ...(config ? ['--config', config] : [])];
  execFileSync(process.execPath, args, {
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
