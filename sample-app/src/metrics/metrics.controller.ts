import { Controller, Get, Header, NotFoundException } from '@nestjs/common';
import { scrapeSampleMetrics } from './sample-metrics.js';

/** `GET /metrics`: the process's OpenTelemetry metrics (the lock library's among them) for Prometheus to scrape. */
@Controller('metrics')
export class MetricsController {
  @Get()
  @Header('Content-Type', 'text/plain; version=0.0.4; charset=utf-8')
  async scrape(): Promise<string> {
    const text = await scrapeSampleMetrics();
    if (text === undefined) throw new NotFoundException('No MeterProvider registered in this process');
    return text;
  }
}
