import { readFileSync } from 'node:fs';
import { Command, CommanderError } from 'commander';
import { registerJobsCommand } from './commands/jobs.command.js';
import { registerLeadersCommand } from './commands/leaders.command.js';
import { registerLogCommand } from './commands/log.command.js';
import { registerMigrateCommand } from './commands/migrate.command.js';
import { registerPermitsCommand } from './commands/permits.command.js';
import { registerReleaseCommand } from './commands/release.command.js';
import { registerStatusCommand } from './commands/status.command.js';
import { cliContext, type CliContext } from './lock-cli.context.js';
import { EXIT, type ExitCode, toCliError } from './lock-cli.errors.js';
import { type CliOutput, PROCESS_OUTPUT } from './lock-cli.output.js';

const EXIT_CODES_HELP = `
Exit codes:
  0  done
  1  a negative answer: no such grant, migrations pending, nothing to do
  2  bad arguments or options (nothing was sent to the database)
  3  the database is unreachable or failed, or the chosen place has no lock tables
  4  the database driver the URL needs is not installed (npm install pg, or mysql2)
  141  the reader of the output went away (| head): the command stops writing, quietly

Environment variables (an option given on the command line wins):
  DATABASE_URL       the database, as --url: postgres://…, or mysql://… / mariadb://… for MySQL/MariaDB
  LOCK_SCHEMA        PostgreSQL: the schema of the lock tables, as --schema
  LOCK_TABLE_PREFIX  MySQL/MariaDB: the prefix of the lock tables, as --table-prefix

When the chosen place has no lock tables but another schema or table prefix of the database has, the commands say
which option selects them, and migrate creates nothing (unless --create-here). --json prints JSON only on stdout;
errors go to stderr.`;

/** The package's version, from its package.json (two folders up, in `lib/` and in `dist/` alike). */
function packageVersion(): string {
  const json: unknown = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8'));
  const version = (json as { version?: unknown }).version;
  return typeof version === 'string' ? version : 'unknown';
}

/** The `nestjs-db-locks` program with its commands, writing to `context.output`. @internal */
export function buildProgram(context: CliContext): Command {
  const program = new Command('nestjs-db-locks')
    .description('Inspect and operate the locks of nestjs-db-locks in their PostgreSQL, MySQL or MariaDB database.')
    .version(packageVersion(), '-V, --version', 'print the version')
    .option('--url <url>', 'the database (default: DATABASE_URL)')
    .option('--json', 'print machine-readable JSON only')
    .option('--schema <name>', 'PostgreSQL: the schema of the lock tables (default: LOCK_SCHEMA, else the search_path)')
    .option('--table-prefix <prefix>', 'MySQL/MariaDB: the prefix of the lock tables (default: LOCK_TABLE_PREFIX, else none)')
    .configureOutput({ writeOut: (text) => context.output.out(text), writeErr: (text) => context.output.err(text) })
    .exitOverride()
    .showSuggestionAfterError()
    .addHelpText('after', EXIT_CODES_HELP);
  registerStatusCommand(program, context);
  registerReleaseCommand(program, context);
  registerPermitsCommand(program, context);
  registerMigrateCommand(program, context);
  registerLogCommand(program, context);
  registerJobsCommand(program, context);
  registerLeadersCommand(program, context);
  return program;
}

/**
 * Runs the command line on `args` (without `node` and the script) and returns its exit code. Writes the answer to
 * stdout and any error as one line to stderr; never throws.
 * @internal
 */
export async function runCli(
  args: readonly string[],
  output: CliOutput = PROCESS_OUTPUT,
  env: NodeJS.ProcessEnv = process.env,
): Promise<ExitCode> {
  const context = cliContext(output, env);
  try {
    await buildProgram(context).parseAsync([...args], { from: 'user' });
    return context.exitCode;
  } catch (error) {
    // Commander has printed its own message (usage errors) or the help / version (exit code 0).
    if (error instanceof CommanderError) return error.exitCode === 0 ? EXIT.ok : EXIT.usage;
    const cliError = toCliError(error, 'the database');
    output.err(`nestjs-db-locks: ${cliError.message}\n`);
    return cliError.exitCode;
  }
}
