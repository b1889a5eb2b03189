import type { Command } from 'commander';
import { parseLockName, parseWhole } from '../lock-cli.arguments.js';
import { withAdmin } from '../lock-cli.connection.js';
import { type CliContext, globalsOf } from '../lock-cli.context.js';
import { printJson, table } from '../lock-cli.output.js';
import { GRANT_COLUMNS, LOG_COLUMNS, PERMITS_COLUMNS, WAITER_COLUMNS } from '../lock-cli.tables.js';

/** `status [--name n] [--limit n]`: grants, waiters, permits rows and the newest log rows. @internal */
export function registerStatusCommand(program: Command, context: CliContext): void {
  program
    .command('status')
    .description('show the grants held now, the waiters, the permits rows and the newest log rows')
    .option('--name <name>', 'only what concerns this lock name', parseLockName)
    .option('--limit <n>', 'how many log rows (1-1000)', (text: string) => parseWhole('limit', text, 1, 1000), 10)
    .action(async (options: { name?: string; limit: number }, command: Command) => {
      const { json, target } = globalsOf(command, context);
      const { name, limit } = options;
      const status = await withAdmin(target(), async (admin) => ({
        grants: await admin.getGrants({ name }),
        waiters: await admin.listWaiters({ name }),
        permits: (await admin.getPermits()).filter((row) => name === undefined || row.name === name),
        log: await admin.getLog({ limit, name }),
      }));
      if (json) return printJson(context.output, status);
      const out = context.output.out;
      out(`Grants held now (${status.grants.length})\n`);
      out(table(status.grants, GRANT_COLUMNS, 'No lock is held.'));
      out(`\nWaiters (${status.waiters.length})\n`);
      out(table(status.waiters, WAITER_COLUMNS, 'Nobody waits.'));
      out('\nPermits rows (names without a row use the defaults of each instance)\n');
      out(table(status.permits, PERMITS_COLUMNS, 'No permits row.'));
      out(`\nLog, newest first (${status.log.length})\n`);
      out(table(status.log, LOG_COLUMNS, 'The log is empty.'));
    });
}
