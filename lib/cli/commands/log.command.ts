import type { Command } from 'commander';
import { parseLockName, parseSince, parseStamp, parseWhole } from '../lock-cli.arguments.js';
import { withAdmin } from '../lock-cli.connection.js';
import { type CliContext, globalsOf } from '../lock-cli.context.js';
import { printJson, table } from '../lock-cli.output.js';
import { LOG_COLUMNS } from '../lock-cli.tables.js';

/** `log [--since t] [--limit n] [--stamp n] [--name n]`: the lock log, newest first. @internal */
export function registerLogCommand(program: Command, context: CliContext): void {
  program
    .command('log')
    .description('show the lock log, newest first')
    .option('--since <time>', 'only grants taken since then: a duration back (30s, 15m, 2h, 7d) or an ISO date', (text: string) =>
      parseSince(text),
    )
    .option('--limit <n>', 'at most this many rows (1-10000)', (text: string) => parseWhole('limit', text, 1, 10000), 50)
    .option('--stamp <stamp>', 'only this grant', parseStamp)
    .option('--name <name>', 'only grants of this lock name', parseLockName)
    .action(async (options: { since?: Date; limit: number; stamp?: number; name?: string }, command: Command) => {
      const { json, target } = globalsOf(command, context);
      const log = await withAdmin(target(), (admin) => admin.getLog(options));
      if (json) return printJson(context.output, log);
      context.output.out(table(log, LOG_COLUMNS, 'No log row matches.'));
    });
}
