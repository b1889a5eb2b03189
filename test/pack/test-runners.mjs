// docs/testing.md's unit-test setups and the README's Quick start build, run as printed, in applications made by
// Nest 12's `nest new`. Packs the library, installs @nestjs/cli 12 in a temporary folder and makes two applications
// with it: `nest new` (the default: an ES module application tested with vitest) and the same schematic with
// `--type=cjs` (what `nest new` makes when CommonJS is chosen at its prompt: tested with jest). It installs the tarball
// and the peers the README's Quick start names into the first (the second shares its node_modules: one install for
// both), writes the tagged blocks of docs/testing.md's "Unit tests" section into them (a block whose fence reads
// ```ts src/x.spec.ts is the file src/x.spec.ts; blocks under "### With vitest" or "### With jest" go to that
// application only, a package.json block is merged into the application's package.json), type-checks the vitest
// application with `tsc` and runs `npm test` in each. Then the README's Quick start becomes the vitest application's
// src/main.ts and `npm run build` must make dist/main.js, as the Quick start says. Fails when any step fails, or when a
// spec file of the docs did not run.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';

const root = resolve(import.meta.dirname, '../..');
const own = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const work = mkdtempSync(join(tmpdir(), 'ndl-runners-'));
/** @type {(cmd: string, args: string[], cwd: string) => string} */
const run = (cmd, args, cwd) => {
  try {
    return execFileSync(cmd, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8' });
  } catch (error) {
    const { stdout = '', stderr = '' } = /** @type {{ stdout?: string, stderr?: string }} */ (error);
    process.stdout.write(stdout);
    process.stderr.write(stderr);
    throw error;
  }
};

/**
 * The tagged blocks of docs/testing.md's "## Unit tests" section: `{ runner, path, code }`, runner `vitest`, `jest` or
 * `both` after the `### With …` heading they stand under.
 */
/** @type {() => DocumentedFile[]} */
function documentedFiles() {
  const lines = readFileSync(join(root, 'docs', 'testing.md'), 'utf8').split('\n');
  const files = [];
  let inSection = false;
  let runner = 'both';
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] ?? '';
    if (line.startsWith('## ')) inSection = line.startsWith('## Unit tests');
    if (!inSection) continue;
    if (line.startsWith('### ')) runner = /vitest/i.test(line) ? 'vitest' : /jest/i.test(line) ? 'jest' : 'both';
    const fence = /^```(\w+) (\S+)\s*$/.exec(line);
    if (!fence) continue;
    const body = [];
    for (i++; i < lines.length && !/^```\s*$/.test(lines[i] ?? ''); i++) body.push(lines[i] ?? '');
    files.push({ runner, path: fence[2] ?? '', code: body.join('\n') + '\n' });
  }
  const specs = files.filter((file) => file.path.endsWith('.spec.ts'));
  if (specs.length === 0) throw new Error('docs/testing.md: no ```ts src/….spec.ts block under "## Unit tests"');
  if (!files.some((file) => file.runner === 'jest' && file.path === 'jest.config.ts')) {
    throw new Error('docs/testing.md: no ```ts jest.config.ts block under "### With jest"');
  }
  return files;
}

/**
 * Tooling of `nest new`'s package.json that has nothing to do with running or type-checking tests (@nestjs/cli is
 * installed once, above the applications): not installed, to save time.
 */
const NOT_NEEDED = new Set([
  '@nestjs/cli', '@nestjs/mau', '@nestjs/schematics', '@vitest/coverage-v8', 'oxlint', 'oxlint-tsgolint', 'prettier',
  'source-map-support', 'ts-loader', 'tsconfig-paths',
]);
/** The packages of the README's Quick start besides the library, in the versions this repository develops with. */
const QUICK_START_PEERS = ['@nestjs/schedule', '@nestjs/typeorm', '@nestjs/terminus', 'typeorm', 'pg'];

/** @typedef {{ runner: string, path: string, code: string }} DocumentedFile */
/** @typedef {{ scripts?: Record<string, string>, dependencies?: Record<string, string>, devDependencies?: Record<string, string> }} PackageJson */

/**
 * Completes an application `nest new` made: its package.json keeps the dependencies that tests need and gets the
 * library's, then the documented files for its runner are written into it.
 * @type {(dir: string, runner: string, files: DocumentedFile[], extraDependencies: Record<string, string>) => PackageJson}
 */
function completeApp(dir, runner, files, extraDependencies) {
  /** @type {PackageJson} */
  const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
  /** @type {(deps: Record<string, string> | undefined) => Record<string, string>} */
  const keep = (deps) => Object.fromEntries(Object.entries(deps ?? {}).filter(([name]) => !NOT_NEEDED.has(name)));
  pkg.dependencies = { ...keep(pkg.dependencies), ...extraDependencies };
  pkg.devDependencies = keep(pkg.devDependencies);
  for (const file of files.filter((f) => f.runner === runner || f.runner === 'both')) {
    if (file.path === 'package.json') {
      pkg.scripts = { ...pkg.scripts, ...JSON.parse(file.code).scripts };
      continue;
    }
    mkdirSync(dirname(join(dir, file.path)), { recursive: true });
    writeFileSync(join(dir, file.path), file.code);
  }
  writeFileSync(join(dir, 'package.json'), JSON.stringify(pkg, null, 2));
  return pkg;
}

/** The README's Quick start application: its first TypeScript block under "## Quick start". */
function quickStartCode() {
  const readme = readFileSync(join(root, 'README.md'), 'utf8');
  const block = /^```ts\n([\s\S]*?)^```$/m.exec(readme.slice(readme.indexOf('\n## Quick start\n')));
  if (!block?.[1]) throw new Error('the README has no TypeScript block under "## Quick start"');
  return block[1];
}

try {
  const files = documentedFiles();
  const tarball = join(work, run('npm', ['pack', '--silent', '--pack-destination', work], root).trim().split('\n').pop() ?? '');
  // Nest 12's command line in the folder above the applications (npm puts its node_modules/.bin on their PATH too).
  writeFileSync(join(work, 'package.json'), JSON.stringify({ name: 'tools', private: true }));
  run('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error', '@nestjs/cli@^12'], work);
  const bin = join(work, 'node_modules', '.bin');
  run(join(bin, 'nest'), ['new', 'vitest-app', '--skip-git', '--skip-install', '--package-manager', 'npm', '--no-observe'], work);
  run(join(bin, 'schematics'), ['@nestjs/schematics:application', '--name=jest-app', '--type=cjs', '--no-dry-run'], work);

  const library = {
    'nestjs-db-locks': `file:${tarball}`,
    ...Object.fromEntries(QUICK_START_PEERS.map((name) => [name, own.devDependencies[name]])),
  };
  const vitestApp = join(work, 'vitest-app');
  const jestApp = join(work, 'jest-app');
  const esmPkg = completeApp(vitestApp, 'vitest', files, library);
  const cjsPkg = completeApp(jestApp, 'jest', files, library);
  // One install for both: the vitest application's, with the jest application's test tooling added.
  esmPkg.devDependencies = { ...cjsPkg.devDependencies, ...esmPkg.devDependencies };
  writeFileSync(join(vitestApp, 'package.json'), JSON.stringify(esmPkg, null, 2));
  run('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error'], vitestApp);
  symlinkSync(join(vitestApp, 'node_modules'), join(jestApp, 'node_modules'), 'dir');
  const versions = ['@nestjs/core', 'typescript', 'vitest', 'jest', 'ts-jest'].map(
    (name) => `${name}@${JSON.parse(readFileSync(join(vitestApp, 'node_modules', name, 'package.json'), 'utf8')).version}`,
  );
  console.log(`nest new applications (ES module + vitest, CommonJS + jest) with ${versions.join(', ')} on Node.js ${process.version}`);

  const specs = [...new Set(files.filter((f) => f.path.endsWith('.spec.ts')).map((f) => f.path))];
  // vitest does not type-check: tsc does, with the application's own tsconfig.json (types vitest/globals and node).
  run(join(vitestApp, 'node_modules', '.bin', 'tsc'), ['--noEmit', '-p', 'tsconfig.json'], vitestApp);
  for (const [dir, runner] of [[vitestApp, 'vitest'], [jestApp, 'jest']]) {
    // jest reports on stderr, vitest on stdout: both are read.
    const result = spawnSync('npm', ['test', '--silent'], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8' });
    const out = `${result.stdout}${result.stderr}`.replace(/\u001b\[[0-9;]*m/g, '');
    if (result.status !== 0) throw new Error(`npm test under ${runner} failed (exit code ${result.status}):\n${out}`);
    const missing = specs.filter((spec) => !out.includes(spec));
    if (missing.length > 0) throw new Error(`${runner} did not run ${missing.join(', ')}:\n${out}`);
    console.log(`${runner}: ${specs.join(', ')} and nest new's src/app.controller.spec.ts passed`);
  }

  // The Quick start's `npm run build` (nest build) turns its main.ts, as src/main.ts, into dist/main.js.
  writeFileSync(join(vitestApp, 'src', 'main.ts'), quickStartCode());
  run('npm', ['run', 'build', '--silent'], vitestApp);
  if (!existsSync(join(vitestApp, 'dist', 'main.js'))) throw new Error('npm run build made no dist/main.js');
  console.log("README Quick start: npm run build made dist/main.js in the nest new application");
} finally {
  rmSync(work, { recursive: true, force: true });
}
