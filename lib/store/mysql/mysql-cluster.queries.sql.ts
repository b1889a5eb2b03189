/**
 * Statements that read what a MySQL or MariaDB server says of its cluster: the `wsrep_*` variables and status values of
 * a Galera node (MariaDB Galera Cluster, Percona XtraDB Cluster). They read no lock table. A node outside the primary
 * component refuses every statement that reads a table (errno 1047), except those that read `information_schema` and
 * `performance_schema` only: these statements answer there too, which is when they are needed most.
 * @internal
 */

/** Where the server keeps its variables and status values, as tables. */
export type ServerValuesSchema = 'information_schema' | 'performance_schema';

/** The values read, by the column that answers each: the table (variables or status) and the value's name. */
const GALERA_VALUES = {
  wsrep_on: ['variables', 'wsrep_on'],
  node_name: ['variables', 'wsrep_node_name'],
  cluster_status: ['status', 'wsrep_cluster_status'],
  local_state: ['status', 'wsrep_local_state_comment'],
  cluster_size: ['status', 'wsrep_cluster_size'],
} as const;

/** A row of `SELECT_GALERA_NODE`: the values as text, null where the server has no such value (not a Galera build). */
export type GaleraNodeRow = { readonly [column in keyof typeof GALERA_VALUES]: string | null };

/**
 * The Galera values of the server in one statement, by where it keeps them: MariaDB keeps them in
 * `information_schema.GLOBAL_VARIABLES` / `GLOBAL_STATUS` (names in capitals; its `performance_schema` has no variables
 * table), MySQL 8 (Percona XtraDB Cluster) in `performance_schema.global_variables` / `global_status` (names in small
 * letters; its `information_schema` has neither table). A server without them (MySQL, a MariaDB built without wsrep)
 * answers nulls; a plain MariaDB answers `wsrep_on = OFF` (and status values of a node in no cluster).
 */
function selectGaleraNode(schema: ServerValuesSchema): string {
  const mariadb = schema === 'information_schema';
  const table = (kind: 'variables' | 'status') =>
    mariadb ? `information_schema.GLOBAL_${kind.toUpperCase()}` : `performance_schema.global_${kind}`;
  const columns = Object.entries(GALERA_VALUES).map(
    ([column, [kind, name]]) =>
      `(SELECT VARIABLE_VALUE FROM ${table(kind)} WHERE VARIABLE_NAME = '${mariadb ? name.toUpperCase() : name}') AS ${column}`,
  );
  return `SELECT ${columns.join(',\n       ')}`;
}

/** `selectGaleraNode` of each place, written once. */
export const SELECT_GALERA_NODE: Readonly<Record<ServerValuesSchema, string>> = {
  information_schema: selectGaleraNode('information_schema'),
  performance_schema: selectGaleraNode('performance_schema'),
};
