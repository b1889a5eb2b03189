import type { ValueTransformer } from 'typeorm';

/**
 * Reads `numeric` / `DECIMAL` and `bigint` columns (strings in `pg`, and in `mysql2` as TypeORM configures it) as
 * JavaScript numbers; the sample's values fit.
 */
export const NUMERIC_AS_NUMBER: ValueTransformer = {
  to: (value: number | null | undefined) => value,
  from: (value: string | null) => (value === null ? null : Number(value)),
};
