import { Injectable } from '@nestjs/common';
import mysql from 'mysql2/promise';
import type { LockFenceStatement, LockTransactionRunner, LockTransactionRunOptions } from 'nestjs-db-locks';

@Injectable()
export class Mysql2Transactions implements LockTransactionRunner<mysql.PoolConnection> {
  readonly pool = mysql.createPool(process.env.DATABASE_URL ?? 'mysql://localhost/app');

  async run<T>(work: (connection: mysql.PoolConnection) => Promise<T>, options: LockTransactionRunOptions): Promise<T> {
    const connection = await this.pool.getConnection();
    try {
      if (options.isolation) await connection.query(`SET TRANSACTION ISOLATION LEVEL ${options.isolation}`);
      await connection.query('BEGIN');
      const value = await work(connection);
      await connection.query('COMMIT');
      return value;
    } catch (error) {
      await connection.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      connection.release();
    }
  }

  execute(connection: mysql.PoolConnection, s: LockFenceStatement): Promise<unknown> {
    return connection.query(s.sql, [...s.params]);
  }
}
