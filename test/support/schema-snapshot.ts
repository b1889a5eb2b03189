import type { TestDatabase } from './test-database.js';

/** The lock engine's objects: everything the migrations create is named `locking…`. */
const OURS = `LIKE 'locking%'`;

/**
 * Writes the schema of a migrated database as readable SQL, from the catalogs (the embedded server ships no
 * `pg_dump`): the sequence, each table with its columns, constraints, storage parameters and indexes, then every
 * function and trigger whole, as PostgreSQL stores them. Deterministic: objects in name order.
 */
export async function schemaSnapshot(db: TestDatabase): Promise<string> {
  const parts: string[] = [
    '-- nestjs-db-locks: the PostgreSQL schema as LOCK_MIGRATIONS leave it.',
    '-- Generated from a migrated database by `npm run schema:update`; test/integration/lock-schema-snapshot.spec.ts',
    '-- fails when it differs from what the migrations create. Read it; never run it (run the migrations).',
    '',
  ];
  const sequences = await db.query<{ name: string; type: string; min: string; max: string; cycle: boolean }>(
    `SELECT sequencename AS name, data_type::text AS type, min_value::text AS min, max_value::text AS max, cycle
       FROM pg_sequences WHERE schemaname = 'public' AND sequencename ${OURS} ORDER BY 1`,
  );
  for (const s of sequences) {
    parts.push(`CREATE SEQUENCE ${s.name} AS ${s.type} MINVALUE ${s.min} MAXVALUE ${s.max} ${s.cycle ? 'CYCLE' : 'NO CYCLE'};`, '');
  }
  const tables = await db.query<{ name: string; options: string[] | null }>(
    `SELECT relname AS name, reloptions AS options FROM pg_class
      WHERE relkind = 'r' AND relnamespace = 'public'::regnamespace AND relname ${OURS} ORDER BY 1`,
  );
  for (const table of tables) parts.push(await tableDefinition(db, table.name, table.options), '');
  const functions = await db.query<{ definition: string }>(
    `SELECT pg_get_functiondef(p.oid) AS definition FROM pg_proc p
      WHERE p.pronamespace = 'public'::regnamespace AND p.proname ${OURS}
      ORDER BY p.proname, pg_get_function_identity_arguments(p.oid)`,
  );
  for (const f of functions) parts.push(`${f.definition.trimEnd()};`, '');
  const triggers = await db.query<{ definition: string }>(
    `SELECT pg_get_triggerdef(t.oid, true) AS definition FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
      WHERE NOT t.tgisinternal AND c.relname ${OURS} ORDER BY t.tgname`,
  );
  for (const t of triggers) parts.push(`${t.definition};`, '');
  return `${parts.join('\n').trimEnd()}\n`;
}

async function tableDefinition(db: TestDatabase, table: string, options: string[] | null): Promise<string> {
  const columns = await db.query<{ name: string; type: string; not_null: boolean; fallback: string | null }>(
    `SELECT a.attname AS name, format_type(a.atttypid, a.atttypmod) AS type, a.attnotnull AS not_null,
            pg_get_expr(d.adbin, d.adrelid) AS fallback
       FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
      WHERE a.attrelid = $1::regclass AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum`,
    [table],
  );
  const constraints = await db.query<{ name: string; definition: string }>(
    `SELECT conname AS name, pg_get_constraintdef(oid) AS definition FROM pg_constraint
      WHERE conrelid = $1::regclass AND contype <> 'n' ORDER BY contype DESC, conname`,
    [table],
  );
  const lines = [
    ...columns.map(
      (c) => `  ${c.name} ${c.type}${c.not_null ? ' NOT NULL' : ''}${c.fallback === null ? '' : ` DEFAULT ${c.fallback}`}`,
    ),
    ...constraints.map((c) => `  CONSTRAINT ${c.name} ${c.definition}`),
  ];
  const statements = [`CREATE TABLE ${table} (\n${lines.join(',\n')}\n);`];
  if (options?.length) statements.push(`ALTER TABLE ${table} SET (${options.join(', ')});`);
  const indexes = await db.query<{ definition: string }>(
    `SELECT pg_get_indexdef(i.indexrelid) AS definition FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
      WHERE i.indrelid = $1::regclass AND NOT i.indisprimary ORDER BY c.relname`,
    [table],
  );
  statements.push(...indexes.map((i) => `${i.definition};`));
  return statements.join('\n');
}
