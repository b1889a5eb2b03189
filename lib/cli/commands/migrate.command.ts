import type { Command } from 'commander';
import { MigrationExecutor } from 'typeorm';
import { lockMigrations } from '../../migrations/lock-migrations.factory.js';
import { withDataSource } from '../lock-cli.connection.js';
import { type CliContext, globalsOf } from '../lock-cli.context.js';
import { EXIT } from '../lock-cli.errors.js';
import { findLockPlaces, lockTablesElsewhereError } from '../lock-cli.places.js';
import { printJson } from '../lock-cli.output.js';

/** What `migrate` did or, with `--check`, would do. */
interface MigrateResult {
  /** The lock migrations run before (and, without `--check`, now). */
  readonly applied: string[];
  /** The lock migrations not run (after `migrate`: none). */
  readonly pending: string[];
  /** The migrations this run applied (empty with `--check`). */
  readonly ran: string[];
}

/**
 * `migrate [--check] [--migrations-table t] [--create-here]`: applies the lock migrations through TypeORM, without a
 * Nest app, and records them in the same migrations table as the application's own (`migrations` by default), so
 * that neither runs them twice. With `--check`: applies nothing, exit code 1 when some are pending. When the chosen
 * place has no lock tables but another place of the database has (another schema or table prefix), it creates
 * nothing and names the option that selects them (exit code 3), unless `--create-here`.
 * @internal
 */
export function registerMigrateCommand(program: Command, context: CliContext): void {
  program
    .command('migrate')
    .description('apply the lock migrations (tables, functions) that have not run yet')
    .option('--check', 'apply nothing; exit code 1 when some are pending (for deploy scripts)')
    .option('--migrations-table <name>', "TypeORM's migrations table of your application", 'migrations')
    .option(
      '--create-here',
      'create the lock tables in the chosen place even though another schema or table prefix of the database has them',
    )
    .action(async (options: { check?: boolean; migrationsTable: string; createHere?: boolean }, command: Command) => {
      const { json, target } = globalsOf(command, context);
      const database = target();
      const migrations = lockMigrations(database.tables);
      const result = await withDataSource(
        database,
        async (dataSource): Promise<MigrateResult> => {
          if (!options.createHere) {
            const places = await findLockPlaces(dataSource, database);
            if (!places.here && places.elsewhere.length > 0) throw lockTablesElsewhereError(database, places, !options.check);
          }
          const executor = new MigrationExecutor(dataSource);
          const pending = (await executor.getPendingMigrations()).map((m) => m.name);
          const ran = options.check ? [] : (await dataSource.runMigrations()).map((m) => m.name);
          const all = migrations.map((m) => m.name);
          const stillPending = pending.filter((name) => !ran.includes(name));
          return { applied: all.filter((name) => !stillPending.includes(name)), pending: stillPending, ran };
        },
        { migrations: [...migrations], migrationsTableName: options.migrationsTable, poolSize: 1 },
      );
      if (result.pending.length > 0) context.exitCode = EXIT.answer;
      if (json) return printJson(context.output, result);
      const out = context.output.out;
      if (result.pending.length > 0) {
        out(`${result.pending.length} lock migration(s) pending:\n${result.pending.map((n) => `  ${n}\n`).join('')}`);
      } else if (result.ran.length > 0) {
        out(`Applied ${result.ran.length} lock migration(s):\n${result.ran.map((n) => `  ${n}\n`).join('')}`);
      } else {
        out(`The lock tables are up to date (${result.applied.length} migrations applied).\n`);
      }
    });
}
