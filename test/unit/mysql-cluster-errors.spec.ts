import { LockStoreError } from 'nestjs-db-locks';
import { commitFailureOf, isRolledBackAtCommit } from '../../lib/fence/fenced-outcome.util.js';
import {
  isMysqlConnectionFailure,
  isRolledBackAtMysqlCommit,
  isTransientMysqlError,
} from '../../lib/store/mysql/mysql-error.util.js';
import { isTransientStoreFault } from '../../lib/store/transient-fault.util.js';

/** A server error as mysql2 gives it. */
const serverError = (errno: number, code: string, message = code): Error =>
  Object.assign(new Error(message), { errno, code, sqlState: '08S01' });

const NOT_READY = serverError(1047, 'ER_UNKNOWN_COM_ERROR', 'WSREP has not yet prepared node for application use');
const CERTIFICATION = serverError(1213, 'ER_LOCK_DEADLOCK', 'Deadlock found when trying to get lock; try restarting transaction');
const CUT_SHORT = serverError(1180, 'ER_ERROR_DURING_COMMIT', 'Got error 6 "No such device or address" during COMMIT');

describe('Galera errors, for what they are', () => {
  it('a node not ready (1047) is transient: nothing ran, the library runs it again and waits ride through', () => {
    expect(isTransientMysqlError(NOT_READY)).toBe(true);
    expect(isMysqlConnectionFailure(NOT_READY)).toBe(false);
    expect(isTransientStoreFault(new LockStoreError('tryLocks', 'ER_UNKNOWN_COM_ERROR', false, NOT_READY))).toBe(true);
  });

  it('a replication cut short at COMMIT (1180) is as uncertain as a lost connection: retried only before the COMMIT', () => {
    expect(isTransientMysqlError(CUT_SHORT)).toBe(false);
    expect(isMysqlConnectionFailure(CUT_SHORT)).toBe(true);
    expect(isRolledBackAtMysqlCommit(CUT_SHORT)).toBe(false);
    expect(commitFailureOf(CUT_SHORT).outcomeUnknown).toBe(true);
  });

  it('a certification failure or a node not ready at a fenced COMMIT is a rollback, never an unknown outcome', () => {
    for (const error of [CERTIFICATION, NOT_READY]) {
      expect(isRolledBackAtCommit(error)).toBe(true);
      const failure = commitFailureOf(error);
      expect(failure).toBeInstanceOf(LockStoreError);
      expect(failure.outcomeUnknown).toBe(false);
    }
  });

  it('PostgreSQL: a serialization failure or a deferred constraint at COMMIT is a rollback; a reset is not known', () => {
    expect(commitFailureOf(Object.assign(new Error('could not serialize'), { code: '40001' })).outcomeUnknown).toBe(false);
    expect(commitFailureOf(Object.assign(new Error('violates'), { code: '23505' })).outcomeUnknown).toBe(false);
    expect(commitFailureOf(Object.assign(new Error('reset'), { code: 'ECONNRESET' })).outcomeUnknown).toBe(true);
  });
});
