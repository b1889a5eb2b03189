/**
 * Reads `bigint` columns (strings in `pg`, and in `mysql2` as TypeORM configures it) as numbers; stamps stay below
 * 2^53.
 * @internal
 */
export const bigintAsNumber = {
  to: (value: number | undefined) => value,
  from: (value: string | null) => (value === null ? null : Number(value)),
};
