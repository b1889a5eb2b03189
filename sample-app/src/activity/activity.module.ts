import { Global, Module } from '@nestjs/common';
import { ActivityService } from './activity.service.js';

/** Provides the instance's activity feed to every feature module. */
@Global()
@Module({ providers: [ActivityService], exports: [ActivityService] })
export class ActivityModule {}
