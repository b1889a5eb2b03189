import type { Command } from 'commander';
import { databaseTarget, type DatabaseTarget, type GlobalOptions } from './lock-cli.connection.js';
import { EXIT, type ExitCode } from './lock-cli.errors.js';
import type { CliOutput } from './lock-cli.output.js';

/** What the commands of one run share: where they write, the environment, and the exit code they set. @internal */
export interface CliContext {
  readonly output: CliOutput;
  readonly env: NodeJS.ProcessEnv;
  /** The exit code of the run; commands set it (0 unless they say otherwise). */
  exitCode: ExitCode;
}

/** A new context: exit code 0 until a command says otherwise. @internal */
export function cliContext(output: CliOutput, env: NodeJS.ProcessEnv): CliContext {
  return { output, env, exitCode: EXIT.ok };
}

/** The global options (`--url`, `--json`) of the command being run, and its checked database URL. @internal */
export function globalsOf(command: Command, context: CliContext): { json: boolean; target: () => DatabaseTarget } {
  const globals = command.optsWithGlobals<GlobalOptions>();
  return { json: globals.json === true, target: () => databaseTarget(globals, context.env) };
}
