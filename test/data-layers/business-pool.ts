import mysql from 'mysql2/promise';
import pg from 'pg';
import type { LockFenceConnection } from 'nestjs-db-locks';
import type { TestDialect } from '../support/dialects.js';
import { positional } from '../support/mysql-test-database.js';

/** A business transaction on a plain driver connection (`$1` placeholders on both dialects). */
export interface BusinessTransaction {
  /** The connection inside BEGIN, as the application hands it to `LockFence`. */
  readonly connection: LockFenceConnection;
  run(text: string, values?: unknown[]): Promise<void>;
  /** The rows of a SELECT. */
  rows<R>(text: string, values?: unknown[]): Promise<R[]>;
  /** Gives the connection back to its pool (rolling back what is still open). */
  end(): Promise<void>;
}

/** The application's own pool on `url`, `pg` or `mysql2/promise`, opening business transactions. */
export interface BusinessPool {
  /** BEGIN, at the server's default isolation level or at `isolation`. */
  begin(isolation?: string): Promise<BusinessTransaction>;
  /** The pool itself, which `LockFence` must refuse. */
  readonly pool: unknown;
  close(): Promise<void>;
}

export function businessPool(dialect: TestDialect, url: string): BusinessPool {
  if (dialect.name === 'PostgreSQL') {
    const pool = new pg.Pool({ connectionString: url, max: 4 });
    return {
      pool,
      async begin(isolation) {
        const client = await pool.connect();
        await client.query(isolation ? `BEGIN ISOLATION LEVEL ${isolation}` : 'BEGIN');
        return {
          connection: client,
          run: async (text, values) => void (await client.query(text, values)),
          rows: async <R>(text: string, values?: unknown[]) => (await client.query(text, values)).rows as R[],
          end: async () => {
            await client.query('ROLLBACK').catch(() => undefined); // a warning only, when nothing is open
            client.release();
          },
        };
      },
      close: () => pool.end(),
    };
  }
  const pool = mysql.createPool({ uri: url, connectionLimit: 4 });
  return {
    pool,
    async begin(isolation) {
      const connection = await pool.getConnection();
      if (isolation) await connection.query(`SET TRANSACTION ISOLATION LEVEL ${isolation}`);
      await connection.query('BEGIN');
      const query = (text: string, values?: unknown[]) => {
        const { sql, params } = positional(text, values);
        return connection.query(sql, params);
      };
      return {
        connection,
        run: async (text, values) => void (await query(text, values)),
        rows: async <R>(text: string, values?: unknown[]) => (await query(text, values))[0] as R[],
        end: async () => {
          await connection.query('ROLLBACK').catch(() => undefined);
          connection.release();
        },
      };
    },
    close: () => pool.end(),
  };
}

