import { hostname } from 'node:os';
import { LockConfigurationError } from '../errors/index.js';
import type { LockModuleExtras, LockModuleOptions, LockPermits, LockRetryOptions, LockTelemetryOptions } from '../interfaces/index.js';
import { DEFAULT_LOCK_TABLES, type LockTables } from '../store/lock-tables.util.js';
import { type LockDatabaseUrl, parseLockDatabaseUrl, redactedUrl } from './lock-url.util.js';
import { assertKnownKeys } from './option-keys.util.js';
import { defaultLockNameAttribute } from '../telemetry/lock-attributes.util.js';
import {
  DEFAULT_PERMITS,
  DEFAULT_PERMITS_REFRESH_INTERVAL_MS,
  APP_ID_PATTERN,
  MAX_PERMITS,
  MIN_WAITER_TTL_MS,
} from '../lock.constants.js';

/** `LockModuleOptions` validated, with every default applied (the only place defaults are merged). @internal */
export interface ResolvedLockOptions {
  readonly appId: string;
  readonly defaultPermits: LockPermits;
  readonly permitsRefreshIntervalMs: number;
  readonly releaseOnStartup: boolean;
  readonly retry: Required<LockRetryOptions>;
  readonly asyncRelease: boolean;
  readonly leaseMs: number;
  readonly renewIntervalMs: number;
  readonly reaperIntervalMs: number;
  readonly maxHoldMs: number;
  /** The lease a new grant starts with: `leaseMs`, or `maxHoldMs` when that is shorter. */
  readonly grantLeaseMs: number;
  readonly logRetentionMs: number;
  readonly reaperBatchSize: number;
  readonly instance: string;
  readonly waitRecheckMs: number;
  /**
   * How long a waiter's rows count after its last attempt: 3 × `waitRecheckMs`, at least `MIN_WAITER_TTL_MS`. A grant
   * a release hands over lasts that long before its holder renews it, so it leaves room for one renewal.
   */
  readonly waiterTtlMs: number;
  readonly queryTimeoutMs: number;
  readonly startupTimeoutMs: number;
  readonly shutdownGraceMs: number;
  /** The direct connection string of the kept sessions (PostgreSQL), when given. */
  readonly directUrl: string | undefined;
  readonly pooler: 'detect' | 'transaction' | 'session';
  readonly telemetry: Required<LockTelemetryOptions>;
  /** Where the lock tables are (the extras `schema` / `tablePrefix`, validated). */
  readonly tables: LockTables;
  readonly instanceRetentionMs: number;
  /** The library's own connection (`url`), when given: the module then needs no TypeORM DataSource of the application. */
  readonly url: LockDatabaseUrl | undefined;
  /** Run the lock migrations on the library's own connection at start-up. */
  readonly migrationsRun: boolean;
}

/** Every key of `LockModuleOptions`: a key added to the interface and not here fails to compile. */
const MODULE_OPTION_KEYS = keysOf<LockModuleOptions>({
  appId: true,
  defaultPermits: true,
  permitsRefreshIntervalMs: true,
  releaseOnStartup: true,
  retry: true,
  leaseMs: true,
  renewIntervalMs: true,
  reaperIntervalMs: true,
  maxHoldMs: true,
  logRetentionMs: true,
  instanceRetentionMs: true,
  reaperBatchSize: true,
  waitRecheckMs: true,
  queryTimeoutMs: true,
  startupTimeoutMs: true,
  shutdownGraceMs: true,
  instance: true,
  asyncRelease: true,
  directUrl: true,
  pooler: true,
  telemetry: true,
  url: true,
  migrationsRun: true,
});
/** Every key of `LockModuleExtras` (given to `forRoot` / `forRootAsync` themselves). @internal */
export const MODULE_EXTRAS_KEYS = keysOf<LockModuleExtras>({
  isGlobal: true,
  dataSource: true,
  dialect: true,
  schema: true,
  tablePrefix: true,
  mountHttpInterceptor: true,
  ownConnection: true,
});
/** Every key of `LockModuleOptions`, for the check of `forRoot`'s own argument. @internal */
export const MODULE_OPTIONS_KEYS: readonly string[] = MODULE_OPTION_KEYS;
const RETRY_KEYS = keysOf<LockRetryOptions>({ maxAttempts: true, initialDelayMs: true, maxDelayMs: true });
const TELEMETRY_KEYS = keysOf<LockTelemetryOptions>({ enabled: true, lockNameAttribute: true });
const PERMITS_KEYS = keysOf<LockPermits>({ read: true, write: true });

/** The keys of an object type, checked complete by the compiler. */
function keysOf<T>(keys: Record<keyof T, true>): string[] {
  return Object.keys(keys);
}

/** Longest period a timer accepts. */
const MAX_INTERVAL_MS = 2 ** 31 - 1;

/** Validates the module options and applies defaults; throws `LockConfigurationError` naming the bad option. @internal */
export function resolveLockOptions(
  options: LockModuleOptions | undefined,
  tables: LockTables = DEFAULT_LOCK_TABLES,
): ResolvedLockOptions {
  if (!options || typeof options !== 'object') {
    throw new LockConfigurationError('LockModule.forRoot() needs options, at least { appId }');
  }
  const extra = Object.keys(options).find((key) => MODULE_EXTRAS_KEYS.includes(key));
  if (extra !== undefined) {
    throw new LockConfigurationError(
      `LockModule option ${extra} shapes the module itself: give it to LockModule.forRootAsync({ ${extra}, useFactory, ... }) ` +
        'beside the factory, not in the options the factory returns',
    );
  }
  assertKnownKeys('LockModule options', options, MODULE_OPTION_KEYS);
  const { appId } = options;
  if (typeof appId !== 'string' || !APP_ID_PATTERN.test(appId)) {
    throw new LockConfigurationError(
      `LockModule option appId must be 1-200 characters of letters, digits and _ . : - / (got ${JSON.stringify(appId)}); ` +
        'give each running instance a stable, unique id',
    );
  }
  const retry = objectOption('retry', options.retry, RETRY_KEYS);
  const defaultPermits = objectOption('defaultPermits', options.defaultPermits, PERMITS_KEYS);
  const leaseMs = integerOption('leaseMs', options.leaseMs, 30_000, 100, MAX_INTERVAL_MS);
  const maxHoldMs = integerOption('maxHoldMs', options.maxHoldMs, 0, 0, Number.MAX_SAFE_INTEGER);
  const waitRecheckMs = integerOption('waitRecheckMs', options.waitRecheckMs, 1000, 10, 60_000);
  const instance = options.instance ?? `${hostname()}:${process.pid}`;
  if (typeof instance !== 'string' || instance.length < 1 || instance.length > 200) {
    throw new LockConfigurationError(`LockModule option instance must be 1-200 characters (got ${String(instance)})`);
  }
  return {
    appId,
    defaultPermits: {
      read: integerOption('defaultPermits.read', defaultPermits.read, DEFAULT_PERMITS.read, 1, MAX_PERMITS),
      write: integerOption('defaultPermits.write', defaultPermits.write, DEFAULT_PERMITS.write, 1, MAX_PERMITS),
    },
    permitsRefreshIntervalMs: integerOption(
      'permitsRefreshIntervalMs',
      options.permitsRefreshIntervalMs,
      DEFAULT_PERMITS_REFRESH_INTERVAL_MS,
      0,
      MAX_INTERVAL_MS,
    ),
    releaseOnStartup: booleanOption('releaseOnStartup', options.releaseOnStartup, true),
    retry: {
      maxAttempts: integerOption('retry.maxAttempts', retry.maxAttempts, 5, 1, 100),
      initialDelayMs: integerOption('retry.initialDelayMs', retry.initialDelayMs, 2, 0, 60_000),
      maxDelayMs: integerOption('retry.maxDelayMs', retry.maxDelayMs, 100, 0, 60_000),
    },
    asyncRelease: booleanOption('asyncRelease', options.asyncRelease, true),
    leaseMs,
    renewIntervalMs: integerOption('renewIntervalMs', options.renewIntervalMs, Math.floor(leaseMs / 3), 10, leaseMs - 1),
    reaperIntervalMs: integerOption('reaperIntervalMs', options.reaperIntervalMs, 10_000, 0, MAX_INTERVAL_MS),
    maxHoldMs,
    grantLeaseMs: maxHoldMs > 0 ? Math.min(leaseMs, maxHoldMs) : leaseMs,
    logRetentionMs: integerOption('logRetentionMs', options.logRetentionMs, 7 * 24 * 3_600_000, 0, Number.MAX_SAFE_INTEGER),
    reaperBatchSize: integerOption('reaperBatchSize', options.reaperBatchSize, 100, 1, 10_000),
    instance,
    waitRecheckMs,
    waiterTtlMs: Math.max(3 * waitRecheckMs, MIN_WAITER_TTL_MS),
    queryTimeoutMs: integerOption('queryTimeoutMs', options.queryTimeoutMs, 10_000, 100, MAX_INTERVAL_MS),
    startupTimeoutMs: integerOption('startupTimeoutMs', options.startupTimeoutMs, 30_000, 0, MAX_INTERVAL_MS),
    shutdownGraceMs: integerOption('shutdownGraceMs', options.shutdownGraceMs, 10_000, 0, MAX_INTERVAL_MS),
    directUrl: directUrlOption(options.directUrl),
    pooler: poolerOption(options.pooler),
    telemetry: telemetryOptions(options.telemetry),
    tables,
    instanceRetentionMs: integerOption(
      'instanceRetentionMs',
      options.instanceRetentionMs,
      7 * 24 * 3_600_000,
      0,
      Number.MAX_SAFE_INTEGER,
    ),
    url: options.url === undefined ? undefined : parseLockDatabaseUrl(options.url),
    migrationsRun: migrationsRunOption(options),
  };
}

/**
 * `migrationsRun`: a boolean, and only with `url` (the application's own DataSource runs its migrations itself).
 * @internal
 */
export function migrationsRunOption(options: Pick<LockModuleOptions, 'url' | 'migrationsRun'>): boolean {
  const run = booleanOption('migrationsRun', options.migrationsRun, false);
  if (run && options.url === undefined) {
    throw new LockConfigurationError(
      'LockModule option migrationsRun runs the lock migrations on the connection the library opens with url: give url, ' +
        'or, with your TypeORM DataSource, put the lock migrations on it (migrations: [...LOCK_MIGRATIONS], migrationsRun: true)',
    );
  }
  return run;
}

/** A `postgres://` or `postgresql://` URL (a socket folder goes in `?host=`), or undefined. */
function directUrlOption(value: unknown): string | undefined {
  if (value === undefined) return undefined;
  let url: URL | undefined;
  try {
    url = typeof value === 'string' ? new URL(value) : undefined;
  } catch {
    url = undefined;
  }
  if (!url || (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:')) {
    throw new LockConfigurationError(
      'LockModule option directUrl must be a postgres:// connection string that reaches PostgreSQL directly (or ' +
        `through a TCP proxy), e.g. 'postgres://user:password@db-host:5432/app' (got ${redactedUrl(value)})`,
    );
  }
  return value as string;
}

function poolerOption(value: unknown): 'detect' | 'transaction' | 'session' {
  if (value === undefined) return 'detect';
  if (value !== 'detect' && value !== 'transaction' && value !== 'session') {
    throw new LockConfigurationError(
      `LockModule option pooler must be 'detect', 'transaction' or 'session' (got ${String(value)})`,
    );
  }
  return value;
}

/** A nested options object (`retry`, `defaultPermits`, `telemetry`): an object of known keys, or `{}` when absent. */
function objectOption<T extends object>(name: string, value: T | undefined, known: readonly string[]): Partial<T> {
  if (value === undefined) return {};
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new LockConfigurationError(`LockModule option ${name} must be an object (got ${String(value)})`);
  }
  assertKnownKeys(`LockModule option ${name}`, value, known);
  return value;
}

function telemetryOptions(options: LockTelemetryOptions | undefined): Required<LockTelemetryOptions> {
  const telemetry = objectOption('telemetry', options, TELEMETRY_KEYS);
  const lockNameAttribute = telemetry.lockNameAttribute ?? defaultLockNameAttribute;
  if (typeof lockNameAttribute !== 'function') {
    throw new LockConfigurationError(
      `LockModule option telemetry.lockNameAttribute must be a function (got ${String(lockNameAttribute)})`,
    );
  }
  return { enabled: booleanOption('telemetry.enabled', telemetry.enabled, true), lockNameAttribute };
}

function integerOption(name: string, value: unknown, fallback: number, min: number, max: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new LockConfigurationError(`LockModule option ${name} must be an integer from ${min} to ${max} (got ${String(value)})`);
  }
  return value;
}

function booleanOption(name: string, value: unknown, fallback: boolean): boolean {
  if (value === undefined) return fallback;
  if (typeof value !== 'boolean') {
    throw new LockConfigurationError(`LockModule option ${name} must be a boolean (got ${String(value)})`);
  }
  return value;
}
