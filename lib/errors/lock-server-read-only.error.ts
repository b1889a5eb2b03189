import { LockStoreError } from './lock-store.error.js';

/**
 * The database server refused to write: it is read-only (a PostgreSQL standby or `default_transaction_read_only = on`,
 * SQLSTATE 25006; a MySQL/MariaDB server with `read_only` set, error 1290 or 1792). Seen during a failover, while a
 * proxy still routes to the demoted primary. Nothing was granted or written; the connection that reached that server
 * is dropped, so the next call finds the writable primary once the proxy moves. A `LockStoreError`, so code that
 * handles store failures handles this one too.
 * @publicApi
 */
export class LockServerReadOnlyError extends LockStoreError {
  constructor(operation: string, code: string | undefined, cause: unknown) {
    super(operation, code, false, cause);
  }
}
