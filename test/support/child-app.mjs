// What the Nest applications of a test's child processes share: their imports (the database, the schedule, LockModule
// with the given options) and a logger that reports the application's warnings and errors as `log` events.
import { ScheduleModule } from '@nestjs/schedule';
import { childDatabaseModule, lockDialect } from './child-database.mjs';

/**
 * The imports of a child's application module.
 * @param {{ forRoot(options: object): import('@nestjs/common').DynamicModule }} lockModule `LockModule` of the built
 *   package (imported by the child)
 * @param {object} options `LockModule.forRoot`'s options (the dialect is added)
 * @returns {import('@nestjs/common').DynamicModule[]}
 */
export function childLockImports(lockModule, options) {
  return [childDatabaseModule(), ScheduleModule.forRoot(), lockModule.forRoot({ ...lockDialect, ...options })];
}

/**
 * A Nest logger that reports every warning and error as a `log` event, and nothing else.
 * @param {(event: Record<string, unknown>) => void} report
 */
export function reportingLogger(report) {
  return {
    log() {},
    debug() {},
    verbose() {},
    /** @param {unknown} message */
    warn: (message) => report({ event: 'log', level: 'warn', message: String(message) }),
    /** @param {unknown} message */
    error: (message) => report({ event: 'log', level: 'error', message: String(message) }),
  };
}
