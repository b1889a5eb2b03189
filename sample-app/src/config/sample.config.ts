/**
 * Everything the sample application can be tuned with. `main.ts` reads it from the environment
 * (`sampleConfigFromEnv`); the tests build it directly, with short durations and the schedule off.
 */
export interface SampleConfig {
  /**
   * The database shared by every instance (the lock tables and the services' own tables): `postgres://` for
   * PostgreSQL, `mysql://` or `mariadb://` for MySQL / MariaDB.
   */
  readonly databaseUrl: string;
  /** This instance's `appId` (seed 000's `app_id`): stable across restarts, unique among live instances. */
  readonly appId: string;
  /** Run the `@Cron` / `@Interval` jobs (the rebuilds and the simulated traffic). The tests run jobs on demand. */
  readonly schedule: boolean;
  /** How long WS1's offline rebuild takes (it commits row by row, on purpose: only the lock protects readers). */
  readonly ws1RebuildMs: number;
  /** How long WS2's rebuild from WS1's data takes. */
  readonly ws2RebuildMs: number;
  /** How long a simulated WS1 reader holds `WS1_READ` (the `ws1-readers` traffic job). */
  readonly ws1ReadHoldMs: number;
  /** How long a repayment's business step takes (seed 002: the bank call inside the business transaction). */
  readonly repaymentMs: number;
  /** How long a debt transfer's business step takes. */
  readonly transferMs: number;
  /** Read permits of a lock name that has no row in `locking_permissions` (write permits stay 1). */
  readonly defaultReadPermits: number;
  /** `LockModule`'s `permitsRefreshIntervalMs`: a permits row reaches every instance's cache within this. */
  readonly permitsRefreshIntervalMs: number;
  /** `LockModule`'s `leaseMs`: a dead holder's locks come back this long after its last renewal. */
  readonly leaseMs: number;
  /** `LockModule`'s `reaperIntervalMs`. */
  readonly reaperIntervalMs: number;
  /**
   * `LockModule`'s `maxHoldMs`: this instance holds no grant longer than this, renewed or not (its lease ends then and
   * a reaper frees it; seed 002's job frees locks held for more than ten minutes); `0` = no limit.
   */
  readonly maxHoldMs: number;
  /** How often the console page polls `/api/state`. */
  readonly consolePollMs: number;
  /**
   * How often the leader of the role `loan-book-report` audits the loan books and publishes the summary; `0`: this
   * instance does not stand for the role.
   */
  readonly loanBookReportMs: number;
}

/** The defaults of `npm start`: jobs every few seconds, lasting a few seconds, so that something is always moving. */
export const DEFAULT_SAMPLE_CONFIG: Omit<SampleConfig, 'databaseUrl' | 'appId'> = {
  schedule: true,
  ws1RebuildMs: 5000,
  ws2RebuildMs: 3000,
  ws1ReadHoldMs: 400,
  repaymentMs: 1500,
  transferMs: 800,
  defaultReadPermits: 5,
  permitsRefreshIntervalMs: 2000,
  leaseMs: 10000,
  reaperIntervalMs: 2000,
  maxHoldMs: 60_000,
  consolePollMs: 1000,
  loanBookReportMs: 5000,
};

/** Reads a non-negative integer from the environment, or the fallback when unset. */
function intFromEnv(env: NodeJS.ProcessEnv, key: string, fallback: number): number {
  const raw = env[key];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isSafeInteger(value) || value < 0) throw new Error(`${key} must be a non-negative integer, got "${raw}"`);
  return value;
}

/**
 * The configuration of one instance from its environment: `APP_ID` (default `sample-1`), `SAMPLE_JOBS=off` to stop
 * the scheduled jobs and traffic, and the durations as `WS1_REBUILD_MS`, `WS2_REBUILD_MS`, `WS1_READ_HOLD_MS`,
 * `REPAYMENT_MS`, `TRANSFER_MS`, `DEFAULT_READ_PERMITS`, `PERMITS_REFRESH_MS`, `LEASE_MS`, `REAPER_INTERVAL_MS`,
 * `MAX_HOLD_MS`, `LOAN_BOOK_REPORT_MS` (0: no candidacy for the leader role; 0 by default with `SAMPLE_JOBS=off`).
 */
export function sampleConfigFromEnv(env: NodeJS.ProcessEnv, databaseUrl: string): SampleConfig {
  const d = DEFAULT_SAMPLE_CONFIG;
  return {
    databaseUrl,
    appId: env.APP_ID || 'sample-1',
    schedule: env.SAMPLE_JOBS !== 'off',
    ws1RebuildMs: intFromEnv(env, 'WS1_REBUILD_MS', d.ws1RebuildMs),
    ws2RebuildMs: intFromEnv(env, 'WS2_REBUILD_MS', d.ws2RebuildMs),
    ws1ReadHoldMs: intFromEnv(env, 'WS1_READ_HOLD_MS', d.ws1ReadHoldMs),
    repaymentMs: intFromEnv(env, 'REPAYMENT_MS', d.repaymentMs),
    transferMs: intFromEnv(env, 'TRANSFER_MS', d.transferMs),
    defaultReadPermits: Math.max(1, intFromEnv(env, 'DEFAULT_READ_PERMITS', d.defaultReadPermits)),
    permitsRefreshIntervalMs: intFromEnv(env, 'PERMITS_REFRESH_MS', d.permitsRefreshIntervalMs),
    leaseMs: intFromEnv(env, 'LEASE_MS', d.leaseMs),
    reaperIntervalMs: intFromEnv(env, 'REAPER_INTERVAL_MS', d.reaperIntervalMs),
    maxHoldMs: intFromEnv(env, 'MAX_HOLD_MS', d.maxHoldMs),
    consolePollMs: d.consolePollMs,
    // SAMPLE_JOBS=off stops the leader role's work too, unless LOAN_BOOK_REPORT_MS asks for it.
    loanBookReportMs: intFromEnv(env, 'LOAN_BOOK_REPORT_MS', env.SAMPLE_JOBS === 'off' ? 0 : d.loanBookReportMs),
  };
}

/** The injection token of `SampleConfig`. */
export const SAMPLE_CONFIG = Symbol('SAMPLE_CONFIG');
