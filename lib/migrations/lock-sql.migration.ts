import type { MigrationInterface, QueryRunner } from 'typeorm';
import { LockConfigurationError } from '../errors/index.js';
import { isMysqlDataSource } from '../store/lock-dialect.util.js';
import { DEFAULT_LOCK_TABLES, inLockTables, type LockTables } from '../store/lock-tables.util.js';

/**
 * A migration of the lock schema: statements run in order on the way up, others on the way down, for the dialect of
 * the DataSource it runs on (PostgreSQL, or MySQL and MariaDB).
 * @internal
 */
export abstract class LockSqlMigration implements MigrationInterface {
  /** Migration name recorded in TypeORM's migrations table (the class name, as TypeORM expects). */
  abstract readonly name: string;

  /** Run in order by `up` on PostgreSQL. */
  protected abstract readonly upStatements: readonly string[];

  /** Run in order by `down` on PostgreSQL. */
  protected abstract readonly downStatements: readonly string[];

  /** Run in order by `up` on MySQL and MariaDB (none: the migration changes PostgreSQL's functions only). */
  protected readonly mysqlUpStatements: readonly string[] = [];

  /** Run in order by `down` on MySQL and MariaDB. */
  protected readonly mysqlDownStatements: readonly string[] = [];

  /** Where the lock tables are: `lockMigrations({ schema })` sets it, every statement is written for it. */
  protected readonly tables: LockTables = DEFAULT_LOCK_TABLES;

  /** True for the first migration: with a schema, it creates the schema when missing. */
  protected readonly opensSchema: boolean = false;

  /** Applies the migration. */
  async up(queryRunner: QueryRunner): Promise<void> {
    const mysql = this.dialectOf(queryRunner);
    const { schema } = this.tables;
    if (!mysql && this.opensSchema && schema !== undefined) await queryRunner.query(createSchemaIfMissing(schema));
    for (const statement of mysql ? this.mysqlUpStatements : this.upStatements) {
      await queryRunner.query(inLockTables(statement, this.tables));
    }
  }

  /** Reverts it (a schema it created stays, empty of lock objects). */
  async down(queryRunner: QueryRunner): Promise<void> {
    const mysql = this.dialectOf(queryRunner);
    for (const statement of mysql ? this.mysqlDownStatements : this.downStatements) {
      await queryRunner.query(inLockTables(statement, this.tables));
    }
  }

  /** True on MySQL/MariaDB; a `LockConfigurationError` when the migration's place is for the other dialect. */
  private dialectOf(queryRunner: QueryRunner): boolean {
    const mysql = isMysqlDataSource(queryRunner.connection);
    if (mysql && this.tables.schema !== undefined) {
      throw new LockConfigurationError(
        `${this.name}: lockMigrations({ schema }) is for PostgreSQL; on MySQL/MariaDB use lockMigrations({ tablePrefix })`,
      );
    }
    if (!mysql && this.tables.tablePrefix !== '') {
      throw new LockConfigurationError(
        `${this.name}: lockMigrations({ tablePrefix }) is for MySQL/MariaDB; on PostgreSQL use lockMigrations({ schema })`,
      );
    }
    return mysql;
  }
}

/**
 * Creates the schema unless it exists: `CREATE SCHEMA IF NOT EXISTS` would need the CREATE privilege on the database
 * even for a schema that a DBA created beforehand.
 */
function createSchemaIfMissing(schema: string): string {
  return `DO $$ BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = '${schema}') THEN CREATE SCHEMA "${schema}"; END IF;
  END $$`;
}
