import {
  type CallHandler,
  type ExecutionContext,
  HttpException,
  Injectable,
  type NestInterceptor,
} from '@nestjs/common';
import { catchError, type Observable, throwError } from 'rxjs';
import { LockNotAcquiredError, LockStoreError } from '../errors/index.js';

/** HTTP 423 Locked (RFC 4918). */
const LOCKED = 423;

/** HTTP 503 Service Unavailable. */
const UNAVAILABLE = 503;

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

/**
 * Maps `LockNotAcquiredError` to **HTTP 423 Locked** with a JSON body naming the locks, and `Retry-After` when the
 * method declared `retryAfterSeconds`; maps `LockStoreError` (the lock database could not be reached, e.g. during a
 * restart) to **HTTP 503 Service Unavailable** with `Retry-After: 1`. Every other error passes through unchanged. `LockModule` mounts it globally
 * (extra `mountHttpInterceptor`, default true); use it with `@UseInterceptors(LockHttpInterceptor)` otherwise.
 * @publicApi
 */
@Injectable()
export class LockHttpInterceptor implements NestInterceptor {
  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    if (context.getType() !== 'http') return next.handle();
    return next.handle().pipe(
      catchError((error: unknown) => {
        if (error instanceof LockStoreError) {
          setHeader(context.switchToHttp().getResponse<unknown>(), 'Retry-After', '1');
          const body: LockUnavailableResponseBody = {
            statusCode: UNAVAILABLE,
            error: 'Service Unavailable',
            message: `The lock database could not be reached (${error.operation})`,
            outcomeUnknown: error.outcomeUnknown,
          };
          return throwError(() => new HttpException(body, UNAVAILABLE, { cause: error }));
        }
        if (!(error instanceof LockNotAcquiredError)) return throwError(() => error);
        if (error.retryAfterSeconds !== undefined) {
          setHeader(context.switchToHttp().getResponse<unknown>(), 'Retry-After', String(error.retryAfterSeconds));
        }
        const body: LockedResponseBody = {
          statusCode: LOCKED,
          error: 'Locked',
          message: error.message,
          locks: error.locks.map(({ name, mode }) => ({ name, mode })),
        };
        return throwError(() => new HttpException(body, LOCKED, { cause: error }));
      }),
    );
  }
}

/** Express (`setHeader`) and Fastify (`header`) responses. */
function setHeader(response: unknown, name: string, value: string): void {
  const res = response as { header?: (n: string, v: string) => unknown; setHeader?: (n: string, v: string) => unknown };
  if (typeof res.setHeader === 'function') res.setHeader(name, value);
  else if (typeof res.header === 'function') res.header(name, value);
}
