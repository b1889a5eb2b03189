import {
  type CallHandler,
  type ExecutionContext,
  HttpException,
  Injectable,
  type NestInterceptor,
} from '@nestjs/common';
import { catchError, type Observable, throwError } from 'rxjs';
import { InvalidLockSpecError, LockLostError, LockNotAcquiredError, LockStoreError } from '../errors/index.js';

/** HTTP 423 Locked (RFC 4918). */
const LOCKED = 423;

/** HTTP 503 Service Unavailable. */
const UNAVAILABLE = 503;

/** HTTP 409 Conflict. */
const CONFLICT = 409;

/** HTTP 400 Bad Request. */
const BAD_REQUEST = 400;

/** The JSON body of a 423 response. @publicApi */
export interface LockedResponseBody {
  /** Always 423. */
  readonly statusCode: 423;
  /** Always `'Locked'`. */
  readonly error: 'Locked';
  /** Which method did not run and which locks were not available. */
  readonly message: string;
  /** The locks that were not available, e.g. `[{ name: 'WS1', mode: 'read' }]`. */
  readonly locks: ReadonlyArray<{
    /** The lock's name. */
    readonly name: string;
    /** The mode that was asked for. */
    readonly mode: 'read' | 'write';
  }>;
}

/** The JSON body of a 503 response: the lock database could not be reached. @publicApi */
export interface LockUnavailableResponseBody {
  /** Always 503. */
  readonly statusCode: 503;
  /** Always `'Service Unavailable'`. */
  readonly error: 'Service Unavailable';
  /** Which lock operation could not reach the database. */
  readonly message: string;
  /** True when the locks may have been granted to nobody (they are freed when their lease ends). */
  readonly outcomeUnknown: boolean;
}

/** The JSON body of a 409 response: the call's grant was lost, and its fenced transaction rolled back. @publicApi */
export interface LockLostResponseBody {
  /** Always 409. */
  readonly statusCode: 409;
  /** Always `'Conflict'`. */
  readonly error: 'Conflict';
  /** Which grant was lost and why. */
  readonly message: string;
  /** The stamp of the lost grant. */
  readonly stamp: number;
  /**
   * Why it was lost, from the lock log when the database said so: e.g. `'its lease ended without a renewal and a
   * reaper freed it'`, `'its release was forced by alice: stuck since 03:00'`.
   */
  readonly reason: string;
}

/** The JSON body of a 400 response: the lock names derived from the request are not valid. @publicApi */
export interface InvalidLockResponseBody {
  /** Always 400. */
  readonly statusCode: 400;
  /** Always `'Bad Request'`. */
  readonly error: 'Bad Request';
  /** Which spec was refused and why. */
  readonly message: string;
}

/**
 * Maps the lock errors of an HTTP handler to responses; every other error passes through unchanged:
 * - `LockNotAcquiredError` → **423 Locked** with a JSON body naming the locks, and `Retry-After` when the method
 *   declared `retryAfterSeconds`;
 * - `LockStoreError` (the lock database could not be reached, e.g. during a restart) → **503 Service Unavailable**
 *   with `Retry-After: 1`;
 * - `LockLostError` (the grant was reaped before the fenced transaction could commit; it rolled back) → **409
 *   Conflict**;
 * - `InvalidLockSpecError` (at call time, only lock names built from the request can be malformed: fixed specs are
 *   checked at start-up) → **400 Bad Request**.
 *
 * `LockModule` mounts it globally (extra `mountHttpInterceptor`, default true); use it with
 * `@UseInterceptors(LockHttpInterceptor)` otherwise.
 * @publicApi
 */
@Injectable()
export class LockHttpInterceptor implements NestInterceptor {
  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    if (context.getType() !== 'http') return next.handle();
    return next.handle().pipe(
      catchError((error: unknown) => {
        const response = context.switchToHttp().getResponse<unknown>();
        const mapped = toHttpException(error, (name, value) => setHeader(response, name, value));
        return throwError(() => mapped ?? error);
      }),
    );
  }
}

/** The response for a lock error, or undefined for any other error. */
function toHttpException(error: unknown, header: (name: string, value: string) => void): HttpException | undefined {
  if (error instanceof LockStoreError) {
    header('Retry-After', '1');
    const body: LockUnavailableResponseBody = {
      statusCode: UNAVAILABLE,
      error: 'Service Unavailable',
      message: `The lock database could not be reached (${error.operation})`,
      outcomeUnknown: error.outcomeUnknown,
    };
    return new HttpException(body, UNAVAILABLE, { cause: error });
  }
  if (error instanceof LockNotAcquiredError) {
    if (error.retryAfterSeconds !== undefined) header('Retry-After', String(error.retryAfterSeconds));
    const body: LockedResponseBody = {
      statusCode: LOCKED,
      error: 'Locked',
      message: error.message,
      locks: error.locks.map(({ name, mode }) => ({ name, mode })),
    };
    return new HttpException(body, LOCKED, { cause: error });
  }
  if (error instanceof LockLostError) {
    const body: LockLostResponseBody = {
      statusCode: CONFLICT,
      error: 'Conflict',
      message: error.message,
      stamp: error.stamp,
      reason: error.reason,
    };
    return new HttpException(body, CONFLICT, { cause: error });
  }
  if (error instanceof InvalidLockSpecError) {
    const body: InvalidLockResponseBody = { statusCode: BAD_REQUEST, error: 'Bad Request', message: error.message };
    return new HttpException(body, BAD_REQUEST, { cause: error });
  }
  return undefined;
}

/** Express (`setHeader`) and Fastify (`header`) responses. */
function setHeader(response: unknown, name: string, value: string): void {
  const res = response as { header?: (n: string, v: string) => unknown; setHeader?: (n: string, v: string) => unknown };
  if (typeof res.setHeader === 'function') res.setHeader(name, value);
  else if (typeof res.header === 'function') res.header(name, value);
}
