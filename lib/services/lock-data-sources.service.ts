import { Inject, Injectable } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { getDataSourceToken } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { LockConfigurationError } from '../errors/index.js';
import { LOCK_DATA_SOURCE } from '../lock.constants.js';

/**
 * The DataSources fenced transactions run on: the one `LockModule` uses (the default), or one registered under a
 * name with `TypeOrmModule.forRoot({ name })`, looked up once and remembered.
 * @internal
 */
@Injectable()
export class LockDataSources {
  private readonly named = new Map<string, DataSource>();

  constructor(
    private readonly moduleRef: ModuleRef,
    @Inject(LOCK_DATA_SOURCE) private readonly own: DataSource,
  ) {}

  /**
   * @throws LockConfigurationError when no DataSource is registered under `name`.
   */
  get(name?: string): DataSource {
    if (name === undefined) return this.own;
    let dataSource = this.named.get(name);
    if (!dataSource) {
      try {
        dataSource = this.moduleRef.get<DataSource>(getDataSourceToken(name), { strict: false });
      } catch (error) {
        throw new LockConfigurationError(
          `@WithLocks asks for a transaction on DataSource "${name}", which the application does not register ` +
            `(TypeOrmModule.forRoot({ name: '${name}', … }))`,
          { cause: error },
        );
      }
      this.named.set(name, dataSource);
    }
    return dataSource;
  }
}
