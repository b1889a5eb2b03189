import {
  GrantNotFoundError,
  InvalidLockArgumentError,
  InvalidLockSpecError,
  JobNotFoundError,
  LockError,
  LockTablesMissingError,
} from '../errors/index.js';

/**
 * The exit codes of `nestjs-db-locks` (documented in `docs/command-line.md`).
 * @internal
 */
export const EXIT = {
  /** Done. */
  ok: 0,
  /** A negative answer: no such grant or job, migrations pending, nothing to do. */
  answer: 1,
  /** Bad arguments or options, found before any connection. */
  usage: 2,
  /** The database is unreachable or failed. */
  database: 3,
  /** The database driver the URL needs (`pg`, or `mysql2` for MySQL/MariaDB) is not installed. */
  driver: 4,
  /** The reader of stdout (or stderr) went away before all was written (`| head`): 128 + SIGPIPE, as a shell reports. */
  closedPipe: 141,
} as const;

/** One of the exit codes. @internal */
export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** An error the command line reports as one line on stderr and ends with `exitCode`. @internal */
export class CliError extends Error {
  constructor(
    message: string,
    /** The process's exit code. */
    readonly exitCode: ExitCode,
  ) {
    super(message);
    this.name = 'CliError';
  }
}

/** Bad arguments: exit code 2. @internal */
export function usageError(message: string): CliError {
  return new CliError(message, EXIT.usage);
}

/** A Node.js or SQLSTATE code of a driver error, if any. */
function codeOf(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code ? code : undefined;
}

/** The package TypeORM could not load (its `DriverPackageNotInstalledError`), if that is what `error` is. */
function missingDriver(error: unknown): string | undefined {
  if (!(error instanceof Error) || error.name !== 'DriverPackageNotInstalledError') return undefined;
  return /npm install ([\w@/.-]+)/.exec(error.message)?.[1] ?? 'mysql2';
}

/** The first line of a message: the command line prints one line per error. */
function firstLine(text: string): string {
  return text.split('\n')[0]?.trim() ?? '';
}

/**
 * Turns whatever a command threw into a `CliError`: the library's typed errors keep their message; anything else
 * (a driver error while connecting, a TypeORM error) becomes "database unreachable or failed" with its code, never a
 * stack trace.
 * @param where the database the command used, without its password, for the message
 * @internal
 */
export function toCliError(error: unknown, where: string): CliError {
  if (error instanceof CliError) return error;
  if (error instanceof InvalidLockSpecError || error instanceof InvalidLockArgumentError) {
    return usageError(firstLine(error.message));
  }
  if (error instanceof LockTablesMissingError) {
    return new CliError(`the lock tables are missing in ${where}: run \`nestjs-db-locks migrate\``, EXIT.database);
  }
  if (error instanceof GrantNotFoundError || error instanceof JobNotFoundError) {
    return new CliError(firstLine(error.message), EXIT.answer);
  }
  if (error instanceof LockError) return new CliError(firstLine(error.message), EXIT.database);
  const driver = missingDriver(error);
  if (driver !== undefined) {
    const urls = driver === 'pg' ? 'postgres:// URLs' : 'mysql:// and mariadb:// URLs';
    return new CliError(
      `the ${driver} package is not installed: run \`npm install ${driver}\` (the driver of ${urls})`,
      EXIT.driver,
    );
  }
  const code = codeOf(error);
  const detail = error instanceof Error && error.message ? `: ${firstLine(error.message)}` : '';
  return new CliError(`database ${where} unreachable or failed${code ? ` (${code})` : ''}${detail}`, EXIT.database);
}
