import type { Command } from 'commander';
import { parseLockName, parseMode, parsePermits } from '../lock-cli.arguments.js';
import { withAdmin } from '../lock-cli.connection.js';
import { type CliContext, globalsOf } from '../lock-cli.context.js';
import { EXIT } from '../lock-cli.errors.js';
import { printJson, table } from '../lock-cli.output.js';
import { PERMITS_COLUMNS } from '../lock-cli.tables.js';
import type { LockMode } from '../../interfaces/index.js';

/** `permits list | set <name> <mode> <n> | unset <name> <mode>`: the rows of `locking_permissions`. @internal */
export function registerPermitsCommand(program: Command, context: CliContext): void {
  const permits = program
    .command('permits')
    .description('list, set or remove permits rows (grants everywhere obey a row from its commit)');
  permits
    .command('list')
    .description('list the permits rows')
    .action(async (_options: unknown, command: Command) => {
      const { json, target } = globalsOf(command, context);
      const rows = await withAdmin(target(), (admin) => admin.getPermits());
      if (json) return printJson(context.output, rows);
      context.output.out(table(rows, PERMITS_COLUMNS, 'No permits row: every name uses the defaults of each instance.'));
    });
  permits
    .command('set')
    .description('set the permits of a lock name in one mode')
    .argument('<name>', 'the lock name', parseLockName)
    .argument('<mode>', 'read or write', parseMode)
    .argument('<permits>', 'how many holders at once (1 or more)', parsePermits)
    .action(async (name: string, mode: LockMode, count: number, _options: unknown, command: Command) => {
      const { json, target } = globalsOf(command, context);
      await withAdmin(target(), (admin) => admin.setPermits(name, mode, count));
      if (json) return printJson(context.output, { name, mode, permits: count });
      context.output.out(`${name} ${mode} permits: ${count}\n`);
    });
  permits
    .command('unset')
    .description("remove a permits row: the name's defaults apply again (exit code 1 when there was no row)")
    .argument('<name>', 'the lock name', parseLockName)
    .argument('<mode>', 'read or write', parseMode)
    .action(async (name: string, mode: LockMode, _options: unknown, command: Command) => {
      const { json, target } = globalsOf(command, context);
      const existed = await withAdmin(target(), async (admin) => {
        const had = (await admin.getPermits()).some((row) => row.name === name && row.mode === mode);
        if (had) await admin.setPermits(name, mode, null);
        return had;
      });
      if (!existed) context.exitCode = EXIT.answer;
      if (json) return printJson(context.output, { name, mode, permits: null, removed: existed });
      if (existed) context.output.out(`${name} ${mode} permits: the default again\n`);
      else context.output.err(`nestjs-db-locks: no permits row for ${name} ${mode}: nothing to do\n`);
    });
}
