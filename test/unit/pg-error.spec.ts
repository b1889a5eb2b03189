import { LockStoreError } from 'nestjs-db-locks';
import { isConnectionFailure, toLockError } from '../../lib/store/postgres/pg-error.util.js';

/** An error shaped as the driver throws it. */
function driverError(code: string | undefined, message = 'boom'): Error {
  return Object.assign(new Error(message), code === undefined ? {} : { code });
}

describe('driver errors become typed errors', () => {
  it.each([
    ['ECONNRESET', 'a socket reset (proxy, load balancer)'],
    ['EPIPE', 'a write to a closed socket'],
    ['ETIMEDOUT', 'a TCP timeout'],
    [undefined, 'a client-side query timeout or an ended connection'],
    ['57P01', 'a terminated backend'],
    ['57P02', 'a crash shutdown'],
    ['08006', 'a connection failure reported by the server'],
  ] as Array<[string | undefined, string]>)('%s (%s) after an acquisition was sent: outcomeUnknown', (code, _what) => {
    expect(isConnectionFailure(driverError(code))).toBe(true);
    const error = toLockError(driverError(code), 'tryLocks', true);
    expect(error).toBeInstanceOf(LockStoreError);
    expect((error as LockStoreError).outcomeUnknown).toBe(true);
    expect((error as LockStoreError).code).toBe(code);
  });

  it.each([
    ['23505', 'a statement error: rolled back'],
    ['40001', 'a serialization failure: rolled back'],
    ['28P01', 'authentication failed: nothing ran'],
  ])('%s (%s): the outcome is known', (code, _what) => {
    expect(isConnectionFailure(driverError(code))).toBe(false);
    expect((toLockError(driverError(code), 'tryLocks', true) as LockStoreError).outcomeUnknown).toBe(false);
  });

  it('a connection failure before the statement was sent is not ambiguous', () => {
    expect((toLockError(driverError('ECONNREFUSED'), 'tryLocks', false) as LockStoreError).outcomeUnknown).toBe(false);
  });
});
