import type { Command } from 'commander';
import type { LockJobAction, LockJobActionKind } from '../../interfaces/index.js';
import { parseReason } from '../lock-cli.arguments.js';
import { withAdmin } from '../lock-cli.connection.js';
import { type CliContext, globalsOf } from '../lock-cli.context.js';
import { usageError } from '../lock-cli.errors.js';
import { printJson, timestamp } from '../lock-cli.output.js';

/** An actor as the controls record it. */
function parseActor(text: string): string {
  const actor = text.trim();
  if (actor.length === 0 || actor.length > 200) throw usageError('--actor must be 1-200 characters of text');
  return actor;
}

/** A job name as the history records it. @internal */
export function parseJobName(text: string): string {
  if (text.length < 1 || text.length > 200) throw usageError(`invalid job name '${text}': expected 1-200 characters`);
  return text;
}

/** What each control does, for its help and its answer. */
const CONTROLS: Record<LockJobActionKind, { readonly help: string; readonly done: (action: LockJobAction) => string }> = {
  pause: {
    help: 'pause a scheduled job on every replica: its ticks are recorded paused and run nowhere until `jobs resume`',
    done: (a) => (a.changed ? `Paused ${a.job} on every replica` : `${a.job} was paused already: nothing changed`),
  },
  resume: {
    help: 'resume a paused scheduled job: its next tick runs',
    done: (a) => (a.changed ? `Resumed ${a.job}: its next tick runs` : `${a.job} was not paused: nothing changed`),
  },
  run: {
    help: 'run a scheduled job once now, on one replica of the fleet, under its locks (after any run of it under way)',
    done: (a) => `Requested a run of ${a.job} (tick ${timestamp(a.tick)}): a replica runs it within about a second; see \`jobs --job ${a.job}\``,
  },
};

/**
 * `jobs pause|resume|run <job> --actor <who> --reason <why>`: the controls of a scheduled job across the fleet, each
 * recorded with its actor and reason. @internal
 */
export function registerJobControlCommands(jobs: Command, context: CliContext): void {
  for (const [action, { help, done }] of Object.entries(CONTROLS) as Array<[LockJobActionKind, (typeof CONTROLS)[LockJobActionKind]]>) {
    jobs
      .command(action)
      .description(help)
      .argument('<job>', 'the job as `jobs` lists it (Class.method, or the schedule\'s name)', parseJobName)
      .requiredOption('--actor <who>', 'who acts (recorded with the action)', parseActor)
      .requiredOption('--reason <text>', 'why (recorded with the action)', parseReason)
      .action(async (job: string, options: { actor: string; reason: string }, command: Command) => {
        const { json, target } = globalsOf(command, context);
        const control = { actor: options.actor, reason: options.reason };
        const answer = await withAdmin(target(), (admin) =>
          action === 'pause' ? admin.pauseJob(job, control) : action === 'resume' ? admin.resumeJob(job, control) : admin.runJobNow(job, control),
        );
        if (json) return printJson(context.output, answer);
        context.output.out(`${done(answer)}.\nRecorded: ${answer.action} by ${answer.actor}: ${answer.reason}\n`);
      });
  }
}
