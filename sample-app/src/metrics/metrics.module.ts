import { Module } from '@nestjs/common';
import { MetricsController } from './metrics.controller.js';

/** Serves `GET /metrics` (Prometheus text format). */
@Module({ controllers: [MetricsController] })
export class MetricsModule {}
