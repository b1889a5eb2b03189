/**
 * `nestjs-db-locks/terminus`: the `@nestjs/terminus` health indicator of the locks. A subpath of its own, so that the
 * main entry never loads `@nestjs/terminus` (an optional peer dependency).
 * @module nestjs-db-locks/terminus
 */
export { LockHealthIndicator } from './lock.health-indicator.js';
