/**
 * `sql` with its numbered placeholders (`$1`, `$2`, PostgreSQL's) as `?`, and the values in the order the placeholders
 * appear (a value used twice is given twice); a statement with `?` placeholders already is returned as it is. Only
 * the library's own statements go through here: none has a `$` followed by a digit anywhere else.
 * @internal
 */
export function positionalSql(sql: string, params: readonly unknown[]): { sql: string; params: unknown[] } {
  if (!/\$\d/.test(sql)) return { sql, params: [...params] };
  const values: unknown[] = [];
  const text = sql.replace(/\$(\d+)/g, (_, index: string) => {
    values.push(params[Number(index) - 1]);
    return '?';
  });
  return { sql: text, params: values };
}
