import type { Command } from 'commander';
import { parseReason, parseStamp } from '../lock-cli.arguments.js';
import { withAdmin } from '../lock-cli.connection.js';
import { type CliContext, globalsOf } from '../lock-cli.context.js';
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
      const released = await withAdmin(target(), (admin) => admin.forceRelease(stamp, options.reason));
      if (json) return printJson(context.output, released);
      context.output.out(
        `Released stamp ${released.stamp} of ${released.appId} (${released.instance}): ${locksText(released.locks)}, ` +
          `held for ${duration(released.heldForMs)}.\nLogged as FORCED by ${released.forcedBy}: ${released.reason}\n`,
      );
    });
}
