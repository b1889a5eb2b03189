import type { Command } from 'commander';
import { InvalidLockArgumentError } from '../../errors/index.js';
import type { LockLeaderInfo } from '../../interfaces/index.js';
import { assertLeaderRole } from '../../leader/leader-role.util.js';
import { withAdmin } from '../lock-cli.connection.js';
import { type CliContext, globalsOf } from '../lock-cli.context.js';
import { usageError } from '../lock-cli.errors.js';
import { type Column, duration, printJson, table, timestamp } from '../lock-cli.output.js';

/** `sample-2, sample-3`: the candidates in the order they will be elected. */
function candidatesText(info: LockLeaderInfo): string {
  return info.candidates.map((candidate) => candidate.appId).join(', ') || '-';
}

/** The columns of the leaders table. @internal */
export const LEADER_COLUMNS: ReadonlyArray<Column<LockLeaderInfo>> = [
  { heading: 'role', cell: (r) => r.role },
  { heading: 'leader', cell: (r) => r.leader?.appId ?? 'none' },
  { heading: 'instance', cell: (r) => r.leader?.instance ?? '-' },
  { heading: 'since', cell: (r) => timestamp(r.leader?.since) },
  // A role without a leader shows its last term: the next leader's token will be larger.
  { heading: 'term', cell: (r) => (r.leader ? String(r.leader.term) : r.term > 0 ? `${r.term} (ended)` : '-'), right: true },
  { heading: 'lease left', cell: (r) => duration(r.leader?.leaseLeftMs), right: true },
  { heading: 'candidates (in order)', cell: candidatesText },
];

/** A role name, as `@Leader` takes it. */
function parseRole(text: string): string {
  try {
    assertLeaderRole(text);
  } catch (error) {
    if (error instanceof InvalidLockArgumentError) throw usageError(`invalid role: ${error.message}`);
    throw error;
  }
  return text;
}

/** `leaders [--role r]`: each role's leader, since when, its term, and the candidates in order. @internal */
export function registerLeadersCommand(program: Command, context: CliContext): void {
  program
    .command('leaders')
    .description("show each leader-election role: its leader (app, instance), since when, its term's fencing token, the candidates in order")
    .option('--role <role>', 'only this role', parseRole)
    .action(async (options: { role?: string }, command: Command) => {
      const { json, target } = globalsOf(command, context);
      const leaders = await withAdmin(target(), (admin) => admin.getLeaders({ role: options.role }));
      if (json) return printJson(context.output, leaders);
      context.output.out(table(leaders, LEADER_COLUMNS, options.role === undefined ? 'No role has been led or waited for yet.' : `No role ${options.role}.`));
    });
}
