import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A migration of the lock schema: statements run in order on the way up, others on the way down.
 * @internal
 */
export abstract class LockSqlMigration implements MigrationInterface {
  /** Migration name recorded in TypeORM's migrations table (the class name, as TypeORM expects). */
  abstract readonly name: string;

  /** Run in order by `up`. */
  protected abstract readonly upStatements: readonly string[];

  /** Run in order by `down`. */
  protected abstract readonly downStatements: readonly string[];

  /** Applies the migration. */
  async up(queryRunner: QueryRunner): Promise<void> {
    for (const statement of this.upStatements) await queryRunner.query(statement);
  }

  /** Reverts it. */
  async down(queryRunner: QueryRunner): Promise<void> {
    for (const statement of this.downStatements) await queryRunner.query(statement);
  }
}
