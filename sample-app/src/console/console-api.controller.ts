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
  JobNotFoundError,
  LockAdminService,
  type LockGrant,
  type LockJobAction,
  type LockJobActionKind,
  type LockJobInfo,
  type LockLeaderInfo,
  type LockLogEntry,
  LockService,
  type LockWaiterInfo,
} from 'nestjs-db-locks';
import { type ActivityEntry, ActivityService } from '../activity/activity.service.js';
import { type ConsoleState, ConsoleStateService, type PermitsView } from './console-state.service.js';
import { parseForceReleaseInput, parseForceReleaseStamp } from './force-release-input.util.js';
import { parseJobControlInput } from './job-control-input.util.js';
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
   * Pauses a scheduled job on every instance (`{ "actor": "…", "reason": "…" }`, both required): its ticks are recorded
   * `paused` until it is resumed. 400 without an actor or a reason (or one too long), 404 for a job no instance has
   * registered; `changed: false` when it was paused already.
   */
  @Post('jobs/:job/pause')
  @HttpCode(200)
  pauseJob(@Param('job') job: string, @Body() body: unknown): Promise<LockJobAction> {
    return this.controlJob(job, body, 'pause');
  }

  /** Resumes a paused job (same body and answers as `pause`): its next tick runs. */
  @Post('jobs/:job/resume')
  @HttpCode(200)
  resumeJob(@Param('job') job: string, @Body() body: unknown): Promise<LockJobAction> {
    return this.controlJob(job, body, 'resume');
  }

  /**
   * Requests one extra run of a job now (same body and answers as `pause`): an instance that has the job runs it once
   * across the fleet, under its locks, after any run of it under way; the answer's `tick` names it in the history.
   */
  @Post('jobs/:job/run')
  @HttpCode(200)
  runJobNow(@Param('job') job: string, @Body() body: unknown): Promise<LockJobAction> {
    return this.controlJob(job, body, 'run');
  }

  private async controlJob(job: string, body: unknown, action: LockJobActionKind): Promise<LockJobAction> {
    const control = parseJobControlInput(body);
    try {
      const done =
        action === 'pause'
          ? await this.admin.pauseJob(job, control)
          : action === 'resume'
            ? await this.admin.resumeJob(job, control)
            : await this.admin.runJobNow(job, control);
      this.activity.record(`job ${action}`, 'done', `${job} by ${done.actor}: ${done.reason}${done.changed ? '' : ' (no change)'}`);
      return done;
    } catch (error) {
      if (error instanceof JobNotFoundError) throw new NotFoundException(error.message);
      if (error instanceof InvalidLockArgumentError) throw new BadRequestException(error.message);
      throw error;
    }
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
