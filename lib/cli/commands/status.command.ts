import type { Command } from 'commander';
import type { LockGaleraNode } from '../../interfaces/index.js';
import { galeraProblems } from '../../utils/galera-problems.util.js';
import { parseLockName, parseWhole } from '../lock-cli.arguments.js';
import { withAdmin } from '../lock-cli.connection.js';
import { type CliContext, globalsOf } from '../lock-cli.context.js';
import { CliError, EXIT, toCliError } from '../lock-cli.errors.js';
import { printJson, table } from '../lock-cli.output.js';
import { GRANT_COLUMNS, LOG_COLUMNS, PERMITS_COLUMNS, WAITER_COLUMNS } from '../lock-cli.tables.js';

/**
 * `status [--name n] [--limit n]`: the Galera node reached (on a Galera cluster only), grants, waiters, permits rows
 * and the newest log rows.
 * @internal
 */
export function registerStatusCommand(program: Command, context: CliContext): void {
  program
    .command('status')
    .description('show the grants held now, the waiters, the permits rows and the newest log rows (and the Galera node)')
    .option('--name <name>', 'only what concerns this lock name', parseLockName)
    .option('--limit <n>', 'how many log rows (1-1000)', (text: string) => parseWhole('limit', text, 1, 1000), 10)
    .action(async (options: { name?: string; limit: number }, command: Command) => {
      const { json, target } = globalsOf(command, context);
      const { name, limit } = options;
      const database = target();
      const status = await withAdmin(database, async (admin) => {
        // First, and on its own: a node outside the primary component answers it, and refuses the reads below.
        const galera = await admin.getGaleraNode().catch(() => undefined); // the reads below say what failed
        try {
          return {
            ...(galera && { galera }),
            grants: await admin.getGrants({ name }),
            waiters: await admin.listWaiters({ name }),
            permits: (await admin.getPermits()).filter((row) => name === undefined || row.name === name),
            log: await admin.getLog({ limit, name }),
          };
        } catch (error) {
          const problems = galera ? galeraProblems(galera) : [];
          if (problems.length === 0) throw error;
          throw new CliError(`${problems.join(' ')} (${toCliError(error, database.where).message})`, EXIT.database);
        }
      });
      if (json) return printJson(context.output, status);
      const out = context.output.out;
      if (status.galera) out(`${galeraLine(status.galera)}\n\n`);
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

/** `Galera node n2: Primary component of 3 nodes, Synced`, and what is wrong with it on the next lines. */
function galeraLine(node: LockGaleraNode): string {
  const nodes = `${node.clusterSize} node${node.clusterSize === 1 ? '' : 's'}`;
  const line = `Galera node ${node.nodeName || '-'}: ${node.clusterStatus} component of ${nodes}, ${node.localState || '-'}`;
  return [line, ...galeraProblems(node).map((problem) => `  ${problem}`)].join('\n');
}
