import {
  BadRequestException,
  Body,
  Controller,
  DefaultValuePipe,
  Get,
  HttpCode,
  NotFoundException,
  Param,
  ParseIntPipe,
  Post,
  Query,
} from '@nestjs/common';
import {
  type ForcedRelease,
  GrantNotFoundError,
  InvalidLockArgumentError,
  InvalidLockSpecError,
  LockAdminService,
  type LockGrant,
  type LockJobInfo,
  type LockLeaderInfo,
  type LockLogEntry,
  LockService,
  type LockWaiterInfo,
} from 'nestjs-db-locks';
import { type ActivityEntry, ActivityService } from '../activity/activity.service.js';
import { type ConsoleState, ConsoleStateService, type PermitsView } from './console-state.service.js';
import { parseForceReleaseInput, parseForceReleaseStamp } from './force-release-input.util.js';
import { parsePermitsInput } from './permits-input.util.js';

/** The lock console's JSON API (documented in `sample-app/README.md`). */
@Controller('api')
export class ConsoleApiController {
  constructor(
    private readonly console: ConsoleStateService,
    private readonly locks: LockService,
    private readonly admin: LockAdminService,
    private readonly activity: ActivityService,
  ) {}

  /** Grants, permits, log, this instance's activity and counters: what the console page polls. */
  @Get('state')
  state(): Promise<ConsoleState> {
    return this.console.state();
  }

  /** Every grant holding locks now, across all instances. */
  @Get('grants')
  grants(): Promise<LockGrant[]> {
    return this.console.grants();
  }

  /** The scheduled `@WithLocks` jobs of every instance: schedule, next tick, last success and last 5 runs. */
  @Get('jobs')
  jobs(): Promise<LockJobInfo[]> {
    return this.console.jobs();
  }

  /**
   * Every leader-election role of the fleet (`loan-book-report` here): its leader (app id, instance), since when, its
   * term (fencing token), and the candidates waiting, in the order they will be elected.
   */
  @Get('leaders')
  leaders(): Promise<LockLeaderInfo[]> {
    return this.console.leaders();
  }

  /** Every caller waiting for a group now (`tryLocks` with `waitMs`), across all instances, in waiting order. */
  @Get('waiters')
  waiters(): Promise<LockWaiterInfo[]> {
    return this.console.waiters();
  }

  /**
   * Frees the grant `stamp` of any instance (`{ "reason": "…" }`, required): the log records it as `FORCED`, with
   * this instance as the one who forced it and the reason. 400 without a reason or without a valid stamp (the path
   * `/api/grants//release` included: the stamp is optional in the route so that its absence is answered, not
   * "Cannot POST"), 404 when no live grant has the stamp.
   */
  @Post('grants/{:stamp}/release')
  @HttpCode(200)
  async forceRelease(@Param('stamp') rawStamp: string | undefined, @Body() body: unknown): Promise<ForcedRelease> {
    const stamp = parseForceReleaseStamp(rawStamp);
    const { reason } = parseForceReleaseInput(body);
    try {
      const released = await this.admin.forceRelease(stamp, reason);
      this.activity.record('force release', 'done', `stamp ${stamp} of ${released.appId}: ${reason}`);
      return released;
    } catch (error) {
      if (error instanceof GrantNotFoundError) throw new NotFoundException(error.message);
      if (error instanceof InvalidLockArgumentError) throw new BadRequestException(error.message);
      throw error;
    }
  }

  /** The newest lock log rows (`?limit=`, 1–500, default 50). */
  @Get('log')
  log(@Query('limit', new DefaultValuePipe(50), ParseIntPipe) limit: number): Promise<LockLogEntry[]> {
    if (limit < 1 || limit > 500) throw new BadRequestException('limit must be from 1 to 500');
    return this.console.log(limit);
  }

  /** The permits in force on this instance and the rows of `locking_permissions`. */
  @Get('permits')
  permits(): Promise<PermitsView> {
    return this.console.permits();
  }

  /**
   * Writes one permits row (`{ "name": "WS1", "mode": "read", "permits": 1 }`) or deletes it (`"permits": null`).
   * Grants everywhere obey it at once; every instance's cache shows it within `permitsRefreshIntervalMs`.
   */
  @Post('permits')
  @HttpCode(200)
  async setPermits(@Body() body: unknown): Promise<PermitsView> {
    const { name, mode, permits } = parsePermitsInput(body);
    try {
      await this.locks.setLockPermits(name, mode, permits);
    } catch (error) {
      if (error instanceof InvalidLockSpecError || error instanceof InvalidLockArgumentError) {
        throw new BadRequestException(error.message);
      }
      throw error;
    }
    this.activity.record('permits', 'done', `${name} ${mode}: ${permits ?? 'default'}`);
    return this.console.permits();
  }

  /** This instance's recent jobs and loan operations. */
  @Get('activity')
  recentActivity(): readonly ActivityEntry[] {
    return this.activity.latest();
  }
}
