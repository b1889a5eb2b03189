// docs/testing.md's unit-test setups, run as printed, in applications shaped as Nest 12's `nest new` makes them.
// Packs the library and makes two applications in a temporary folder from the templates of @nestjs/schematics 12
// (the package `nest new` renders them from): the default one (an ES module application tested with vitest) and the
// `--type cjs` one (CommonJS, tested with jest). It installs the tarball and the peers the README's Quick start names
// into the first (the second shares its node_modules: one install for both), writes the tagged blocks of
// docs/testing.md's "Unit tests" section into them (a block whose fence reads ```ts src/x.spec.ts is the file
// src/x.spec.ts; blocks under "### With vitest" or "### With jest" go to that application only, a package.json block
// is merged into the application's package.json), type-checks the vitest application with `tsc` and runs `npm test`
// in each. Fails when either runner fails, or when a spec file of the docs did not run.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
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
 * Renders a file of @nestjs/schematics' application templates as `nest new my-app` does (strict, no observe).
 * @type {(template: string) => string}
 */
function render(template) {
  const text = template
    .replace(/<% if \(observe\) \{ %>[\s\S]*?<% \} %>/g, '')
    .replace(/<%= (\w+) %>/g, (_, /** @type {string} */ key) => {
      /** @type {Record<string, string>} */
      const values = { name: 'my-app', version: '0.0.1', description: '', author: '', specFileSuffix: 'spec', strict: 'true' };
      const value = values[key];
      if (value === undefined) throw new Error(`unknown template value ${key}`);
      return value;
    });
  if (text.includes('<%')) throw new Error(`a template tag was left unrendered:\n${text}`);
  return text;
}

/** Tooling of `nest new`'s package.json that has nothing to do with running tests: not installed, to save time. */
const NOT_NEEDED = new Set([
  '@nestjs/cli', '@nestjs/mau', '@nestjs/schematics', '@types/express', '@types/supertest', '@vitest/coverage-v8',
  'oxlint', 'oxlint-tsgolint', 'prettier', 'source-map-support', 'supertest', 'ts-loader', 'tsconfig-paths',
]);
/** The packages of the README's Quick start besides the library, in the versions this repository develops with. */
const QUICK_START_PEERS = ['@nestjs/schedule', '@nestjs/typeorm', '@nestjs/terminus', 'typeorm', 'pg'];

/** @typedef {{ runner: string, path: string, code: string }} DocumentedFile */
/** @typedef {{ scripts?: Record<string, string>, dependencies?: Record<string, string>, devDependencies?: Record<string, string> }} PackageJson */

/**
 * Writes one application from the template folder `files/<kind>` (`ts-esm` or `ts`): its package.json (the listed
 * dependencies only), configuration files and `src/`, then the documented files for its runner.
 * @type {(templates: string, kind: string, dir: string, runner: string, files: DocumentedFile[], extraDependencies: Record<string, string>) => PackageJson}
 */
function makeApp(templates, kind, dir, runner, files, extraDependencies) {
  const from = join(templates, kind);
  mkdirSync(join(dir, 'src'), { recursive: true });
  /** @type {PackageJson} */
  const pkg = JSON.parse(render(readFileSync(join(from, 'package.json'), 'utf8')));
  /** @type {(deps: Record<string, string> | undefined) => Record<string, string>} */
  const keep = (deps) => Object.fromEntries(Object.entries(deps ?? {}).filter(([name]) => !NOT_NEEDED.has(name)));
  pkg.dependencies = { ...keep(pkg.dependencies), ...extraDependencies };
  pkg.devDependencies = keep(pkg.devDependencies);
  for (const name of readdirSync(from)) {
    if (name.endsWith('.ts') || name.endsWith('.json')) {
      if (name !== 'package.json') writeFileSync(join(dir, name), render(readFileSync(join(from, name), 'utf8')));
    }
  }
  for (const name of readdirSync(join(from, 'src'))) {
    writeFileSync(join(dir, 'src', name.replace('__specFileSuffix__', 'spec')), render(readFileSync(join(from, 'src', name), 'utf8')));
  }
  for (const file of files.filter((f) => f.runner === runner || f.runner === 'both')) {
    if (file.path === 'package.json') {
      const fragment = JSON.parse(file.code);
      pkg.scripts = { ...pkg.scripts, ...fragment.scripts };
      continue;
    }
    mkdirSync(dirname(join(dir, file.path)), { recursive: true });
    writeFileSync(join(dir, file.path), file.code);
  }
  writeFileSync(join(dir, 'package.json'), JSON.stringify(pkg, null, 2));
  return pkg;
}

try {
  const files = documentedFiles();
  const tarball = join(work, run('npm', ['pack', '--silent', '--pack-destination', work], root).trim().split('\n').pop() ?? '');
  // The templates `nest new` renders, from the registry's @nestjs/schematics 12.
  const schematicsTgz = run('npm', ['pack', '--silent', '--pack-destination', work, '@nestjs/schematics@^12'], work).trim().split('\n').pop() ?? '';
  run('tar', ['xzf', schematicsTgz], work);
  const templates = join(work, 'package', 'dist', 'lib', 'application', 'files');

  const library = {
    'nestjs-db-locks': `file:${tarball}`,
    ...Object.fromEntries(QUICK_START_PEERS.map((name) => [name, own.devDependencies[name]])),
  };
  const vitestApp = join(work, 'vitest-app');
  const jestApp = join(work, 'jest-app');
  const esmPkg = makeApp(templates, 'ts-esm', vitestApp, 'vitest', files, library);
  const cjsPkg = makeApp(templates, 'ts', jestApp, 'jest', files, library);
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
} finally {
  rmSync(work, { recursive: true, force: true });
}
