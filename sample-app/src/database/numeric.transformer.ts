import type { ValueTransformer } from 'typeorm';

/** Reads PostgreSQL `numeric` / `bigint` columns (strings in `pg`) as JavaScript numbers; the sample's values fit. */
export const NUMERIC_AS_NUMBER: ValueTransformer = {
  to: (value: number | null | undefined) => value,
  from: (value: string | null) => (value === null ? null : Number(value)),
};
