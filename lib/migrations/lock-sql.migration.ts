import type { MigrationInterface, QueryRunner } from 'typeorm';
import { isMysqlDataSource } from '../store/lock-dialect.util.js';

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

  /** Applies the migration. */
  async up(queryRunner: QueryRunner): Promise<void> {
    const mysql = isMysqlDataSource(queryRunner.connection);
    for (const statement of mysql ? this.mysqlUpStatements : this.upStatements) await queryRunner.query(statement);
  }

  /** Reverts it. */
  async down(queryRunner: QueryRunner): Promise<void> {
    const mysql = isMysqlDataSource(queryRunner.connection);
    for (const statement of mysql ? this.mysqlDownStatements : this.downStatements) await queryRunner.query(statement);
  }
}
