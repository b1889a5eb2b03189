import type { TestDatabase } from './test-database.js';

/** One row of `locking`, as the tests read it. */
export interface LockRow {
  lock_name: string;
  mode: 'R' | 'W';
  app_id: string;
  stamp: string;
}

/** Every lock row, in a stable order. */
export function lockRows(db: TestDatabase): Promise<LockRow[]> {
  return db.query<LockRow>('SELECT lock_name, mode, app_id, stamp FROM locking ORDER BY stamp, lock_name');
}

/** Both tables, for "nothing changed" assertions. */
export async function tableSnapshot(db: TestDatabase): Promise<unknown> {
  return {
    locking: await lockRows(db),
    permissions: await db.query('SELECT lock_name, mode, permits FROM locking_permissions ORDER BY 1, 2'),
  };
}
