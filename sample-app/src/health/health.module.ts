import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { LockHealthIndicator } from 'nestjs-db-locks/terminus';
import { HealthController } from './health.controller.js';

/** `GET /health`: `TerminusModule` and `LockHealthIndicator`, next to `LockModule` in `AppModule`. */
@Module({
  imports: [TerminusModule],
  controllers: [HealthController],
  providers: [LockHealthIndicator],
})
export class HealthModule {}
