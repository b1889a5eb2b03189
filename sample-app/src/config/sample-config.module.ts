import { type DynamicModule, Global, Module } from '@nestjs/common';
import { SAMPLE_CONFIG, type SampleConfig } from './sample.config.js';

/** Makes the instance's `SampleConfig` injectable everywhere (and in `LockModule.forRootAsync`'s factory). */
@Global()
@Module({})
export class SampleConfigModule {
  /** Provides `config` under `SAMPLE_CONFIG`. */
  static forRoot(config: SampleConfig): DynamicModule {
    return {
      module: SampleConfigModule,
      providers: [{ provide: SAMPLE_CONFIG, useValue: config }],
      exports: [SAMPLE_CONFIG],
    };
  }
}
