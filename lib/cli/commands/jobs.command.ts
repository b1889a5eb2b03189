import type { Command } from 'commander';
import type { LockJobInfo, LockJobRun } from '../../interfaces/index.js';
import { parseSince, parseWhole } from '../lock-cli.arguments.js';
import { withAdmin } from '../lock-cli.connection.js';
import { type CliContext, globalsOf } from '../lock-cli.context.js';
import { type Column, duration, printJson, table, timestamp } from '../lock-cli.output.js';
import { parseJobName, registerJobControlCommands } from './job-controls.command.js';

/** `skipped 2 busy, 1 elsewhere`: the replicas a tick refused. */
function skippedText(run: LockJobRun): string {
  const parts = [
    run.skippedBusy > 0 ? `${run.skippedBusy} busy` : '',
    run.skippedElsewhere > 0 ? `${run.skippedElsewhere} elsewhere` : '',
  ];
  return parts.filter(Boolean).join(', ') || '-';
}

/** `succeeded`, `failed (RangeError)`. */
function outcomeText(run: LockJobRun): string {
  return run.error ? `${run.outcome} (${run.error})` : run.outcome;
}

/** The columns of the jobs table. @internal */
export const JOB_COLUMNS: ReadonlyArray<Column<LockJobInfo>> = [
  { heading: 'job', cell: (j) => j.job },
  { heading: 'schedule', cell: (j) => j.schedule },
  { heading: 'next tick', cell: (j) => timestamp(j.nextTick) },
  {
    heading: 'last success',
    cell: (j) => (j.lastSucceededAgeSeconds === null ? 'never' : `${duration(j.lastSucceededAgeSeconds * 1000)} ago`),
    right: true,
  },
  { heading: 'last tick', cell: (j) => timestamp(j.lastRuns[0]?.tick) },
  { heading: 'outcome', cell: (j) => (j.lastRuns[0] ? outcomeText(j.lastRuns[0]) : '-') },
  { heading: 'app', cell: (j) => j.lastRuns[0]?.appId ?? '-' },
  { heading: 'paused', cell: (j) => (j.paused ? `by ${j.paused.actor}: ${j.paused.reason}` : '-') },
];

/** The columns of the runs table. @internal */
export const JOB_RUN_COLUMNS: ReadonlyArray<Column<LockJobRun>> = [
  { heading: 'tick', cell: (r) => timestamp(r.tick) },
  { heading: 'job', cell: (r) => r.job },
  { heading: 'outcome', cell: (r) => outcomeText(r) },
  { heading: 'app', cell: (r) => r.appId ?? '-' },
  { heading: 'stamp', cell: (r) => (r.stamp === null ? '-' : String(r.stamp)), right: true },
  { heading: 'duration', cell: (r) => duration(r.durationMs), right: true },
  { heading: 'skipped', cell: skippedText },
  { heading: 'by', cell: (r) => (r.actor === null ? '-' : `${r.manual ? 'run now' : 'paused'} by ${r.actor}: ${r.reason ?? ''}`) },
];

/**
 * `jobs [--job name] [--since t] [--limit n]`: the scheduled jobs with their next tick, last success and last run;
 * with `--job` (or `--since`), the run history, newest tick first; `jobs pause|resume|run <job>` act on a job (see
 * `registerJobControlCommands`). @internal
 */
export function registerJobsCommand(program: Command, context: CliContext): void {
  const jobs = program
    .command('jobs')
    .description('show the scheduled @WithLocks jobs (next tick, last success, last run), or with --job their run history')
    .option('--job <name>', 'the runs of this job (Class.method), newest tick first', parseJobName)
    .option('--since <time>', 'runs whose tick is since then: a duration back (30s, 15m, 2h, 7d) or an ISO date', (text: string) =>
      parseSince(text),
    )
    .option('--limit <n>', 'at most this many runs (1-10000)', (text: string) => parseWhole('limit', text, 1, 10000), 50)
    .action(async (options: { job?: string; since?: Date; limit: number }, command: Command) => {
      const { json, target } = globalsOf(command, context);
      if (options.job === undefined && options.since === undefined) {
        const jobs = await withAdmin(target(), (admin) => admin.getJobs({ runs: 5 }));
        if (json) return printJson(context.output, jobs);
        return context.output.out(table(jobs, JOB_COLUMNS, 'No scheduled job has registered yet.'));
      }
      const runs = await withAdmin(target(), (admin) => admin.getJobRuns(options));
      if (json) return printJson(context.output, runs);
      context.output.out(table(runs, JOB_RUN_COLUMNS, 'No run matches.'));
    });
  registerJobControlCommands(jobs, context);
}
