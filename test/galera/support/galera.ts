import mysql from 'mysql2/promise';
import { createMysqlTestDatabase } from '../../support/mysql-test-database.js';
import type { TestDatabase } from '../../support/test-database.js';

/** The URLs of the Galera cluster's nodes (node 1 first), from the global setup; undefined when there is none. */
export function galeraUrls(): string[] | undefined {
  const urls = process.env.NDL_TEST_GALERA_URLS?.split(',').filter(Boolean);
  return urls && urls.length > 0 ? urls : undefined;
}

/** `describe` when the Galera specs have a cluster, else `describe.skip` (the global setup said why). */
export const describeOnGalera: jest.Describe = galeraUrls() ? describe : describe.skip;

/** `describe` when the global setup started the cluster itself (its nodes can be killed and isolated), else skipped. */
export const describeOnOwnGalera: jest.Describe = galeraUrls() && process.env.NDL_TEST_GALERA_CONTROL ? describe : describe.skip;

/** A test database of a Galera spec, created (and migrated) through node 1 and replicated to every node. */
export interface GaleraDatabase extends TestDatabase {
  /** The database's URL on each node, node 1 first. */
  readonly urls: readonly string[];
  /** Runs SQL on node `index` (1…), after it applied every write set the cluster committed before (`wsrep_sync_wait`). */
  queryOn<R = Record<string, unknown>>(index: number, sql: string, values?: unknown[]): Promise<R[]>;
}

/** `url` with the host and port of `node` (a node URL of the cluster). */
function onNode(url: string, node: string): string {
  const target = new URL(url);
  const { host } = new URL(node);
  target.host = host;
  return target.toString();
}

/**
 * Creates a database of its own on the cluster (with the lock tables migrated, unless `migrate: false`), and waits
 * until every node has it.
 */
export async function createGaleraDatabase(options: { migrate?: boolean } = {}): Promise<GaleraDatabase> {
  const nodes = galeraUrls();
  if (!nodes) throw new Error('no Galera cluster: set GALERA_URLS or install galera-4 and rsync');
  const db = await createMysqlTestDatabase({ ...options, adminUrl: nodes[0] });
  const urls = nodes.map((node) => onNode(db.url, node));
  const queryOn = async <R>(index: number, sql: string, values: unknown[] = []): Promise<R[]> => {
    const url = urls[index - 1];
    if (!url) throw new Error(`no galera node ${index}`);
    const connection = await mysql.createConnection({ uri: url, supportBigNumbers: true, bigNumberStrings: true, timezone: 'Z' });
    try {
      // Causal reads: the node first applies what the cluster committed before this statement.
      await connection.query('SET SESSION wsrep_sync_wait = 15');
      return (await connection.query(sql, values))[0] as R[];
    } finally {
      await connection.end();
    }
  };
  // The DDL replicates in total order: each node answers once it applied it.
  for (let index = 1; index <= urls.length; index++) await queryOn(index, 'SELECT 1');
  return { ...db, urls, queryOn };
}

/** Kills, starts, isolates or heals node `index` of the cluster the global setup started; resolves once done. */
export async function galeraNode(index: number, action: 'kill9' | 'start' | 'isolate' | 'heal'): Promise<void> {
  const control = process.env.NDL_TEST_GALERA_CONTROL;
  if (!control) throw new Error('the Galera cluster is not the global setup’s own (GALERA_URLS): it cannot be hurt');
  const response = await fetch(`${control}/nodes/${index}/${action}`, { method: 'POST' });
  if (!response.ok) throw new Error(`galera node ${index} ${action}: ${await response.text()}`);
}
