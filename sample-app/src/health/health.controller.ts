import { Controller, Get } from '@nestjs/common';
import { HealthCheck, HealthCheckService, type HealthCheckResult } from '@nestjs/terminus';
import { LockHealthIndicator } from 'nestjs-db-locks/terminus';

/**
 * `GET /health`, as the README tells users to write it: terminus with the locks' indicator. 200 `up` while this
 * instance holds its app id, reaches the database, has every lock migration run and renews its leases; 503 `down`
 * with the problems otherwise.
 */
@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly locks: LockHealthIndicator,
  ) {}

  /** The health report. */
  @Get()
  @HealthCheck()
  check(): Promise<HealthCheckResult> {
    return this.health.check([() => this.locks.isHealthy('locks')]);
  }
}
