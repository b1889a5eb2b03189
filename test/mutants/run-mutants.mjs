// The mutant record that runs (`npm run mutants`): each `test/mutants/*.patch` plants one fault in `lib/` and names the
// spec (and the tests) that must catch it. Each is applied in turn to a scratch copy of this checkout (its working
// tree as it is, `node_modules` linked), its spec runs there, and the row is CAUGHT when a test of that spec fails with
// the fault and the spec passes without it; MISSED when the spec passes with it; INVALID when the patch no longer
// applies or no test of that spec ran. Exit status 1 when any row is not CAUGHT.
//
//   npm run mutants                    every row
//   npm run mutants -- --changed [rev] the rows whose patched files differ from rev (default: the merge base with main,
//                                      or HEAD~1 on main itself)
//   npm run mutants -- <name>…         the rows named (file names without .patch)
//
// A patch is `git diff` output; the lines before its first `diff --git` are its header:
//   Mutant: what the fault is, in the user's words
//   Spec: test/…/x.spec.ts
//   Tests: a jest --testNamePattern (optional: every test of the spec)
//   Build: yes (optional: the spec runs the built dist/, so the scratch copy is built after the patch)
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * @typedef {{ name: string, path: string, files: string[], spec: string, tests?: string, build?: string, mutant?: string }} Row
 * @typedef {{ failed: number, passed: number, tests: string, output: string }} SpecRun
 */

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const folder = join(root, 'test', 'mutants');

/**
 * One row: its patch, header and the files it changes.
 * @param {string} file
 * @returns {Row}
 */
function readRow(file) {
  const text = readFileSync(join(folder, file), 'utf8');
  const start = text.indexOf('diff --git ');
  if (start < 0) throw new Error(`${file}: no diff in it`);
  const header = Object.fromEntries(
    text
      .slice(0, start)
      .split('\n')
      .map((line) => /^(\w+):\s*(.*)$/.exec(line))
      .flatMap((match) => (match ? [[String(match[1]).toLowerCase(), String(match[2]).trim()]] : [])),
  );
  if (!header.spec) throw new Error(`${file}: no "Spec:" line in its header`);
  const files = [...text.matchAll(/^diff --git a\/(\S+) b\//gm)].map((match) => match[1]);
  return { ...header, name: file.replace(/\.patch$/, ''), path: join(folder, file), spec: header.spec, files };
}

/** @param {string[]} args */
function git(...args) {
  return execFileSync('git', args, { cwd: root, encoding: 'utf8' }).trim();
}

/**
 * The files that differ from `base` (committed or not).
 * @param {string} base
 */
function changedSince(base) {
  const committed = git('diff', '--name-only', base).split('\n');
  const untracked = git('ls-files', '--others', '--exclude-standard').split('\n');
  return new Set([...committed, ...untracked].filter(Boolean));
}

function defaultBase() {
  const head = git('rev-parse', 'HEAD');
  let base = head;
  try {
    base = git('merge-base', 'HEAD', 'main');
  } catch {
    // no branch named main: compare with the previous commit
  }
  return base === head ? 'HEAD~1' : base;
}

/** A copy of the checkout to plant faults in, `node_modules` linked, without the build outputs. */
function scratchCopy() {
  const dir = mkdtempSync(join(tmpdir(), 'ndl-mutants-'));
  const skip = new Set(['node_modules', '.git', 'dist', 'build', 'coverage']);
  for (const entry of readdirSync(root)) {
    if (skip.has(entry)) continue;
    cpSync(join(root, entry), join(dir, entry), { recursive: true });
  }
  symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'));
  return dir;
}

/**
 * @param {string} dir
 * @param {string} command
 * @param {string[]} args
 */
function run(dir, command, args) {
  return spawnSync(command, args, { cwd: dir, encoding: 'utf8', env: { ...process.env, CI: 'true' }, maxBuffer: 64 * 1024 * 1024 });
}

/**
 * Runs the row's spec in `dir`: whether it failed, and how many tests ran.
 * @param {string} dir
 * @param {{ spec: string, tests?: string }} row
 * @returns {SpecRun}
 */
function runSpec(dir, row) {
  // The Galera specs have a Jest config of their own (they start a cluster once).
  const config = row.spec.startsWith('test/galera/') ? ['-c', 'jest.galera.config.js'] : [];
  const args = ['--experimental-vm-modules', 'node_modules/jest/bin/jest.js', ...config, row.spec];
  if (row.tests) args.push('--testNamePattern', row.tests);
  const result = run(dir, process.execPath, args);
  const output = `${result.stdout}\n${result.stderr}`;
  const tests = /^Tests:\s+(.*)$/m.exec(output)?.[1] ?? '';
  const failed = Number(/(\d+) failed/.exec(tests)?.[1] ?? 0);
  const passed = Number(/(\d+) passed/.exec(tests)?.[1] ?? 0);
  return { failed, passed, tests, output };
}

/** @param {string} dir */
function build(dir) {
  const result = run(dir, 'npm', ['run', 'build', '--silent']);
  if (result.status !== 0) throw new Error(`build failed:\n${result.stdout}\n${result.stderr}`);
}

const argv = process.argv.slice(2);
let rows = readdirSync(folder)
  .filter((file) => file.endsWith('.patch'))
  .sort()
  .map(readRow);
if (argv[0] === '--changed') {
  const base = argv[1] ?? defaultBase();
  const changed = changedSince(base);
  rows = rows.filter((row) => row.files.some((file) => changed.has(file)));
  console.log(`Rows whose files differ from ${base}: ${rows.length}`);
} else if (argv.length > 0) {
  rows = rows.filter((row) => argv.includes(row.name));
}

const dir = scratchCopy();
/** @type {Array<{ row: Row, verdict: string }>} */
const results = [];
try {
  // The specs must pass without any fault first: a row whose spec fails anyway proves nothing.
  const specs = [...new Set(rows.map((row) => `${row.spec}\u0000${row.tests ?? ''}`))];
  /** @type {Map<string, SpecRun>} */
  const clean = new Map();
  if (rows.some((row) => row.build === 'yes')) build(dir);
  for (const key of specs) {
    const [spec = '', tests = ''] = key.split('\u0000');
    clean.set(key, runSpec(dir, { spec, tests: tests || undefined }));
  }
  for (const row of rows) {
    const started = Date.now();
    const key = `${row.spec}\u0000${row.tests ?? ''}`;
    let verdict;
    let detail = '';
    const apply = run(dir, 'git', ['apply', row.path]);
    if (apply.status !== 0) {
      verdict = 'INVALID';
      detail = `the patch no longer applies: ${apply.stderr.trim()}`;
    } else {
      try {
        if (row.build === 'yes') build(dir);
        const before = /** @type {SpecRun} */ (clean.get(key));
        const after = runSpec(dir, row);
        if (before.failed > 0) {
          verdict = 'INVALID';
          detail = `the spec fails without the fault too (${before.tests})`;
        } else if (after.failed > 0) {
          verdict = 'CAUGHT';
          detail = after.tests;
        } else if (after.passed === 0) {
          verdict = 'INVALID';
          detail = `no test ran (${after.tests || after.output.split('\n').find((line) => line.includes('●')) || 'see the spec'})`;
        } else {
          verdict = 'MISSED';
          detail = after.tests;
        }
      } finally {
        run(dir, 'git', ['apply', '-R', row.path]);
        if (row.build === 'yes') build(dir);
      }
    }
    const seconds = ((Date.now() - started) / 1000).toFixed(0);
    results.push({ row, verdict });
    console.log(`${verdict.padEnd(7)} ${row.name} (${seconds} s): ${row.mutant ?? ''}\n        ${row.spec}${row.tests ? ` › ${row.tests}` : ''}: ${detail}`);
  }
} finally {
  if (existsSync(dir)) rmSync(dir, { recursive: true, force: true });
}
const caught = results.filter((result) => result.verdict === 'CAUGHT').length;
console.log(`\n${caught} caught, ${results.length - caught} not caught, of ${results.length} mutants`);
process.exitCode = caught === results.length ? 0 : 1;
