import { LOCK_MIGRATIONS } from 'nestjs-db-locks';
import { DataSource } from 'typeorm';
import { sampleDataSourceOptions } from './sample-dialect.js';
import { CreateSampleTables1763900000000 } from './migrations/1763900000000-create-sample-tables.js';

/**
 * The library's lock tables first, then the sample services' own tables: one list for every dialect (each migration
 * runs the statements of the database it runs on).
 */
export const SAMPLE_MIGRATIONS = [...LOCK_MIGRATIONS, CreateSampleTables1763900000000];

/**
 * Runs the pending migrations on `url` once, on a connection of its own: the cluster does this before it starts its
 * instances, so that three processes never race to create the same tables.
 * @returns the names of the migrations that ran.
 */
export async function runSampleMigrations(url: string): Promise<string[]> {
  const dataSource = new DataSource({ ...sampleDataSourceOptions(url, 'migrations'), migrations: SAMPLE_MIGRATIONS });
  await dataSource.initialize();
  try {
    return (await dataSource.runMigrations({ transaction: 'each' })).map((migration) => migration.name);
  } finally {
    await dataSource.destroy();
  }
}
