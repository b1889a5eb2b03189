import type { Command } from 'commander';
import { LockStoreError } from '../../errors/index.js';
import { parseReason, parseStamp } from '../lock-cli.arguments.js';
import { withAdmin } from '../lock-cli.connection.js';
import { type CliContext, globalsOf } from '../lock-cli.context.js';
import { CliError, EXIT } from '../lock-cli.errors.js';
import { duration, locksText, printJson } from '../lock-cli.output.js';

/** `release <stamp> --reason <text>`: frees any instance's grant, recorded as FORCED with the reason. @internal */
export function registerReleaseCommand(program: Command, context: CliContext): void {
  program
    .command('release')
    .description("force the release of a grant of any instance; the log records it as FORCED, by whom and why")
    .argument('<stamp>', 'the stamp of the grant (see `status`)', parseStamp)
    .requiredOption('--reason <text>', 'why (recorded in the log)', parseReason)
    .action(async (stamp: number, options: { reason: string }, command: Command) => {
      const { json, target } = globalsOf(command, context);
      const released = await withAdmin(target(), (admin) =>
        admin.forceRelease(stamp, options.reason).catch((error: unknown) => {
          throw honestFailure(error, stamp);
        }),
      );
      if (json) return printJson(context.output, released);
      context.output.out(
        `Released stamp ${released.stamp} of ${released.appId} (${released.instance}): ${locksText(released.locks)}, ` +
          `held for ${duration(released.heldForMs)}.\nLogged as FORCED by ${released.forcedBy}: ${released.reason}\n`,
      );
    });
}

/**
 * A forced release that failed in the database says whether it may still happen: a statement that timed out on the
 * client may still be waiting on the server (behind a transaction holding the grant) and commit after it.
 */
function honestFailure(error: unknown, stamp: number): unknown {
  if (!(error instanceof LockStoreError)) return error;
  const cause = error.message.split('\n')[0] ?? '';
  return new CliError(
    error.outcomeUnknown
      ? `the release of stamp ${stamp} may still take effect (${cause}): the database may be waiting for a transaction ` +
          `holding the grant; see \`nestjs-db-locks log --stamp ${stamp}\` before trying again`
      : `stamp ${stamp} was not released (${cause}); nothing changed`,
    EXIT.database,
  );
}
