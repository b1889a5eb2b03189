import { Injectable } from '@nestjs/common';
import { HealthIndicatorService, type HealthIndicatorResult } from '@nestjs/terminus';
import { LockService } from '../services/lock.service.js';

/**
 * A `@nestjs/terminus` health indicator of the locks of this instance (`LockService.getHealth()`): `up` with the
 * details when the instance holds its app id, the database answers, the lock migrations are all run and lease
 * renewals succeed; `down` with the same details and the `problems` otherwise. Add it to the providers of the module
 * of your health controller, next to `TerminusModule`:
 *
 * ```ts
 * @Get('health')
 * @HealthCheck()
 * check() {
 *   return this.health.check([() => this.locks.isHealthy('locks')]);
 * }
 * ```
 * @publicApi
 */
@Injectable()
export class LockHealthIndicator {
  constructor(
    private readonly lockService: LockService,
    private readonly indicators: HealthIndicatorService,
  ) {}

  /**
   * Checks the locks now (bounded by the module's `queryTimeoutMs`).
   * @param key the key of the result in the health report.
   */
  async isHealthy<const Key extends string = 'locks'>(key: Key = 'locks' as Key): Promise<HealthIndicatorResult<Key>> {
    const indicator = this.indicators.check(key);
    const { healthy, ...details } = await this.lockService.getHealth();
    return healthy ? indicator.up(details) : indicator.down(details);
  }
}
