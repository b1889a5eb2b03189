import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { Ws1Module } from '../ws1/ws1.module.js';
import { Ws2PriceEntity } from './ws2-price.entity.js';
import { Ws2PricesService } from './ws2-prices.service.js';
import { Ws2RebuildJob } from './ws2-rebuild.job.js';
import { Ws2Controller } from './ws2.controller.js';

/** WS2 (seed 000): a web service that builds its data from WS1's, under `WS2_WRITE` + `WS1_READ`. */
@Module({
  imports: [TypeOrmModule.forFeature([Ws2PriceEntity]), Ws1Module],
  controllers: [Ws2Controller],
  providers: [Ws2PricesService, Ws2RebuildJob],
})
export class Ws2Module {}
