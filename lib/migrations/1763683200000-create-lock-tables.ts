import type { MigrationInterface, QueryRunner } from 'typeorm';
import { CREATE_LOCK_SCHEMA, DROP_LOCK_SCHEMA } from '../store/postgres-lock.schema.sql.js';

/**
 * Creates the lock engine's sequence, tables (`locking`, `locking_permissions`) and functions.
 * @publicApi
 */
export class CreateLockTables1763683200000 implements MigrationInterface {
  /** Migration name recorded in TypeORM's migrations table. */
  readonly name = 'CreateLockTables1763683200000';

  /** Creates the schema. */
  async up(queryRunner: QueryRunner): Promise<void> {
    for (const statement of CREATE_LOCK_SCHEMA) await queryRunner.query(statement);
  }

  /** Drops the schema (and every lock held in it). */
  async down(queryRunner: QueryRunner): Promise<void> {
    for (const statement of DROP_LOCK_SCHEMA) await queryRunner.query(statement);
  }
}
