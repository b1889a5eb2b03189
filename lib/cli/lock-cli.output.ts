import type { LockRequest } from '../interfaces/index.js';

/** Where a command writes: stdout for its answer, stderr for notes. Tests and `main` pass the process's. @internal */
export interface CliOutput {
  /** Writes to stdout. */
  out(text: string): void;
  /** Writes to stderr. */
  err(text: string): void;
}

/** The process's own stdout and stderr. @internal */
export const PROCESS_OUTPUT: CliOutput = {
  out: (text) => void process.stdout.write(text),
  err: (text) => void process.stderr.write(text),
};

/** One column of a table: its heading and how a row shows in it. @internal */
export interface Column<T> {
  readonly heading: string;
  readonly cell: (row: T) => string;
  /** Right-aligned (numbers). */
  readonly right?: boolean;
}

/**
 * An aligned plain-text table: headings in capitals, one line per row, columns two spaces apart. No trailing blanks.
 * @param empty the line shown instead when there is no row
 * @internal
 */
export function table<T>(rows: readonly T[], columns: ReadonlyArray<Column<T>>, empty: string): string {
  if (rows.length === 0) return `${empty}\n`;
  const cells = [columns.map((c) => c.heading.toUpperCase()), ...rows.map((row) => columns.map((c) => oneLine(c.cell(row))))];
  const widths = columns.map((_, i) => Math.max(...cells.map((line) => line[i]?.length ?? 0)));
  return cells
    .map((line) =>
      line
        .map((text, i) => (columns[i]?.right ? text.padStart(widths[i] ?? 0) : text.padEnd(widths[i] ?? 0)))
        .join('  ')
        .trimEnd(),
    )
    .join('\n')
    .concat('\n');
}

/** Control characters (a newline in a reason) would break a table's lines. */
function oneLine(text: string): string {
  return text.replace(/[\u0000-\u001f\u007f]+/g, ' ');
}

/** `1.5 s`, `2 min 5 s`, `3 h 10 min`, `2 d 4 h`: a duration for people; negative as `-1.5 s`. @internal */
export function duration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return '-';
  if (ms < 0) return `-${duration(-ms)}`;
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(1)} s`;
  const [big, small, bigUnit, smallUnit] =
    s < 3600 ? [60, 1, 'min', 's'] : s < 86_400 ? [3600, 60, 'h', 'min'] : [86_400, 3600, 'd', 'h'];
  const whole = Math.floor(s / big);
  const rest = Math.floor((s - whole * big) / small);
  return rest ? `${whole} ${bigUnit} ${rest} ${smallUnit}` : `${whole} ${bigUnit}`;
}

/** `2026-11-23 18:04:05` in UTC, or `-`. @internal */
export function timestamp(date: Date | string | null | undefined): string {
  if (date === null || date === undefined) return '-';
  const d = date instanceof Date ? date : new Date(date);
  return Number.isNaN(d.getTime()) ? String(date) : d.toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z');
}

/** `WS1 W, WS2 R`: a group of locks in one cell. @internal */
export function locksText(locks: readonly LockRequest[]): string {
  return locks.map((lock) => `${lock.name} ${lock.mode === 'write' ? 'W' : 'R'}`).join(', ');
}

/** Prints `value` as indented JSON: the whole stdout of a `--json` run. @internal */
export function printJson(output: CliOutput, value: unknown): void {
  output.out(`${JSON.stringify(value, null, 2)}\n`);
}
