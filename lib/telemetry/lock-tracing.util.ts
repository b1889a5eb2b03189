import type { Span, Tracer } from '@opentelemetry/api';
import type { LockRequest } from '../interfaces/index.js';
import type { OtelApi } from './otel-api.loader.js';

/** Name of the library's tracer and meter. @internal */
export const INSTRUMENTATION_SCOPE = 'nestjs-db-locks';

/**
 * The library's spans: one per `tryLocks`, `releaseLocks` and locked method, children of the active span (the
 * application's HTTP request, job, …). A locked method's span is active while it runs, so that its `tryLocks` span
 * and the method's own spans nest under it; it gets the stamp of the grant taken for it. Errors are recorded on the
 * span, with status ERROR.
 * @internal
 */
export class LockTracing {
  private readonly tracer: Tracer;
  /** The spans of locked methods running now, to give them the stamp of their grant. */
  private readonly lockedSpans = new WeakSet<Span>();

  constructor(
    private readonly api: OtelApi,
    private readonly appId: string,
  ) {
    this.tracer = api.trace.getTracer(INSTRUMENTATION_SCOPE);
  }

  /** Starts the span of a `tryLocks` call of `group`. */
  startAcquire(group: readonly LockRequest[], waitMs: number): Span {
    const span = this.tracer.startSpan('LockService.tryLocks');
    if (span.isRecording()) {
      span.setAttributes({
        'lock.names': group.map((request) => request.name),
        'lock.modes': group.map((request) => request.mode),
        'lock.wait_ms': waitMs,
        'app.id': this.appId,
      });
    }
    return span;
  }

  /** Ends a `tryLocks` span with its stamp (0: not available), or its error; a locked method's span gets the stamp. */
  endAcquire(span: Span, stamp: number, error: unknown): void {
    if (error === undefined) {
      span.setAttribute('lock.stamp', stamp);
      span.setAttribute('lock.outcome', stamp > 0 ? 'granted' : 'busy');
      const parent = this.api.trace.getActiveSpan();
      if (stamp > 0 && parent && this.lockedSpans.has(parent)) parent.setAttribute('lock.stamp', stamp);
    } else {
      span.setAttribute('lock.outcome', 'error');
      this.fail(span, error);
    }
    span.end();
  }

  /** Starts the span of a `releaseLocks(stamp)` call. */
  startRelease(stamp: number): Span {
    const span = this.tracer.startSpan('LockService.releaseLocks');
    if (span.isRecording()) span.setAttributes({ 'lock.stamp': stamp, 'app.id': this.appId });
    return span;
  }

  /** Ends a `releaseLocks` span, with its error if it failed. */
  endRelease(span: Span, error: unknown): void {
    if (error !== undefined) this.fail(span, error);
    span.end();
  }

  /** Runs a locked method inside its own active span, named after it (`WithLocks LoansService.approve`). */
  async traceLocked<T>(target: string, run: () => Promise<T>): Promise<T> {
    const { context, trace } = this.api;
    const span = this.tracer.startSpan(`WithLocks ${target}`);
    if (span.isRecording()) span.setAttributes({ 'code.function': target, 'app.id': this.appId });
    this.lockedSpans.add(span);
    try {
      return await context.with(trace.setSpan(context.active(), span), run);
    } catch (error) {
      this.fail(span, error);
      throw error;
    } finally {
      this.lockedSpans.delete(span);
      span.end();
    }
  }

  private fail(span: Span, error: unknown): void {
    const exception = error instanceof Error ? error : new Error(String(error));
    span.recordException(exception);
    span.setStatus({ code: this.api.SpanStatusCode.ERROR, message: exception.message });
  }
}
