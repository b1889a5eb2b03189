import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { Ws1RateEntity } from './ws1-rate.entity.js';
import { Ws1RatesService } from './ws1-rates.service.js';
import { Ws1ReadersJob } from './ws1-readers.job.js';
import { Ws1RebuildJob } from './ws1-rebuild.job.js';
import { Ws1Controller } from './ws1.controller.js';

/** WS1 (seed 000): a web service whose offline job rebuilds its data under `WS1_WRITE`. */
@Module({
  imports: [TypeOrmModule.forFeature([Ws1RateEntity])],
  controllers: [Ws1Controller],
  providers: [Ws1RatesService, Ws1RebuildJob, Ws1ReadersJob],
  exports: [Ws1RatesService],
})
export class Ws1Module {}
