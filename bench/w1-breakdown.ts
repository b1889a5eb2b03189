// Where an uncontended grant's time goes (issue 14: "measure where each microsecond goes"): W1 for the durable floor,
// the bare rows of a grant in the library's tables (the lock row; the lock row and its log row) and the library, in
// interleaved rounds like the other rows. Each step's cost is the difference of its time per acquire + release.
import { bareRowsContender } from './contenders/bare-rows.contender.js';
import type { Contender, ContenderId } from './contenders/contender.js';
import { floorContender } from './contenders/floor.contender.js';
import { libraryContender } from './contenders/library.contender.js';
import { type Measurement, ratesOf } from './stats.js';

/** The floor, the bare rows and the library, in the order each adds to the previous one. */
export function breakdownContenders(url: string): Contender[] {
  return [floorContender(url, true), bareRowsContender(url, false), bareRowsContender(url, true), libraryContender(url)];
}

/** The steps from the floor to the library, each named by what it adds. */
const STEPS: ReadonlyArray<{ readonly from: ContenderId; readonly to: ContenderId; readonly adds: string }> = [
  { from: 'floor-async', to: 'rows-lock', adds: 'the lock row in `locking` (stamp sequence, second index, release in PL/pgSQL)' },
  { from: 'rows-lock', to: 'rows-lock-log', adds: 'the log row (inserted by the grant, updated by the release)' },
  { from: 'rows-lock-log', to: 'library', adds: 'the checks, the advisory lock and the library itself (client side)' },
];

/** Time per acquire + release of a measurement, in µs; NaN without one. */
export const microseconds = (m: Measurement | undefined): number =>
  1e6 / (m ? ratesOf(m).acquisitionsPerSecond : Number.NaN);

/** The breakdown's table and lines. */
export function formatBreakdown(measurements: readonly Measurement[]): string[] {
  const of = (id: ContenderId): Measurement | undefined => measurements.find((m) => m.contenderId === id);
  const floor = microseconds(of('floor-async'));
  const bare = microseconds(of('rows-lock-log'));
  const library = microseconds(of('library'));
  const row = (label: string, value: number): string =>
    `| ${label.padEnd(78)} | ${(Number.isFinite(value) ? value.toFixed(0) : 'n/a').padStart(8)} |`;
  return [
    'Where an uncontended grant goes (W1, time per acquire + release over all rounds):',
    '',
    `| ${'step'.padEnd(78)} | ${'µs'.padStart(8)} |`,
    `|${'-'.repeat(80)}|${'-'.repeat(9)}:|`,
    row('durable floor (async delete): one row in, one row out', floor),
    ...STEPS.map((step) => row(`+ ${step.adds}`, microseconds(of(step.to)) - microseconds(of(step.from)))),
    row('= nestjs-db-locks LockService', library),
    '',
    `The bare lock row + log row reach ${(floor / bare).toFixed(3)} x the floor's rate, the library ` +
      `${(floor / library).toFixed(3)} x; the library reaches ${(bare / library).toFixed(3)} x its own bare rows.`,
  ];
}
