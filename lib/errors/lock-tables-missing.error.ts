import { LockError } from './lock.error.js';

/**
 * The lock tables or functions do not exist in the database: the shipped migration has not run.
 * @publicApi
 */
export class LockTablesMissingError extends LockError {
  constructor(cause: unknown) {
    super(
      'The nestjs-db-locks tables are missing. Add LOCK_MIGRATIONS to your DataSource `migrations` and run them ' +
        '(or set `migrationsRun: true`); for tables in a schema or with a prefix of their own, lockMigrations({ schema }) ' +
        'or lockMigrations({ tablePrefix }).',
      { cause },
    );
  }
}
