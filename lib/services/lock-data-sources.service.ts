import { Inject, Injectable, Optional } from '@nestjs/common';
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
    /** None in `LockTestingModule` unless its `dataSource` option names one. */
    @Optional() @Inject(LOCK_DATA_SOURCE) private readonly own?: DataSource,
  ) {}

  /**
   * Checks at start-up that `name` can be looked up: a missing default DataSource (`LockTestingModule` without its
   * `dataSource` option) is left to the calls, so that the other methods of a class stay testable.
   * @throws LockConfigurationError when no DataSource is registered under `name`.
   */
  verify(name?: string): void {
    if (name !== undefined || this.own) this.get(name);
  }

  /**
   * @throws LockConfigurationError when no DataSource is registered under `name`, or when the module has none.
   */
  get(name?: string): DataSource {
    if (name === undefined) {
      if (this.own) return this.own;
      throw new LockConfigurationError(
        '@WithLocks({ transaction }) runs its method in a transaction of a TypeORM DataSource, and LockTestingModule ' +
          "has none: give it one (LockTestingModule.forRoot({ dataSource: 'default' }) with TypeOrmModule in the test), " +
          'or test the method against a database (docs/testing.md)',
      );
    }
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
