import type { DataSource } from 'typeorm';
import { LockStoreError, type LockGaleraNode } from 'nestjs-db-locks';
import { SELECT_GALERA_NODE } from '../../lib/store/mysql/mysql-cluster.queries.sql.js';
import { MysqlLockAdminStore } from '../../lib/store/mysql/mysql-lock-admin.store.js';
import type { MysqlStatementRunner } from '../../lib/store/mysql/mysql-statement.runner.js';
import { galeraProblems } from '../../lib/utils/galera-problems.util.js';

/** The values a server answers to `SELECT_GALERA_NODE` (text, as the driver reads them). */
const SYNCED_NODE = { wsrep_on: 'ON', node_name: 'n2', cluster_status: 'Primary', local_state: 'Synced', cluster_size: '3' };

/**
 * A statement runner that answers `SELECT_GALERA_NODE` with `row`, or fails the `information_schema` one as MySQL 8
 * does (errno 1109: it has no such table there), and records the statements it was sent.
 */
function fakeRunner(row: Record<string, string | null> | undefined, mysql8 = false) {
  const sent: string[] = [];
  const runner = {
    async select(_operation: string, sql: string): Promise<unknown[]> {
      sent.push(sql);
      if (mysql8 && sql.includes('information_schema')) {
        const driver = Object.assign(new Error("Unknown table 'GLOBAL_VARIABLES' in information_schema"), {
          errno: 1109,
          code: 'ER_UNKNOWN_TABLE',
        });
        throw new LockStoreError('getGaleraNode', 'ER_UNKNOWN_TABLE', false, driver);
      }
      return row === undefined ? [] : [row];
    },
  };
  const store = new MysqlLockAdminStore(runner as unknown as MysqlStatementRunner, {} as DataSource);
  return { store, sent };
}

describe('the Galera node, as MySQL and MariaDB report it', () => {
  it('reads the node in one statement of information_schema on MariaDB', async () => {
    const { store, sent } = fakeRunner(SYNCED_NODE);
    expect(await store.galeraNode()).toEqual<LockGaleraNode>({
      nodeName: 'n2',
      clusterStatus: 'Primary',
      localState: 'Synced',
      clusterSize: 3,
    });
    expect(sent).toEqual([SELECT_GALERA_NODE.information_schema]);
  });

  it('on MySQL 8 (no such table in information_schema) reads performance_schema, and goes there at once after', async () => {
    const { store, sent } = fakeRunner(SYNCED_NODE, true);
    expect(await store.galeraNode()).toMatchObject({ nodeName: 'n2', clusterSize: 3 });
    expect(await store.galeraNode()).toMatchObject({ nodeName: 'n2', clusterSize: 3 });
    expect(sent).toEqual([
      SELECT_GALERA_NODE.information_schema,
      SELECT_GALERA_NODE.performance_schema,
      SELECT_GALERA_NODE.performance_schema,
    ]);
  });

  it('is no node unless wsrep_on is ON: a plain MariaDB (status values of a node in no cluster), MySQL (none)', async () => {
    const plainMariadb = { ...SYNCED_NODE, wsrep_on: 'OFF', cluster_status: 'Disconnected', local_state: 'Initialized', cluster_size: '0' };
    expect(await fakeRunner(plainMariadb).store.galeraNode()).toBeUndefined();
    const mysql = { wsrep_on: null, node_name: null, cluster_status: null, local_state: null, cluster_size: null };
    expect(await fakeRunner(mysql, true).store.galeraNode()).toBeUndefined();
  });

  it('lets other failures through (the health check reports the database)', async () => {
    const runner = {
      select: () => Promise.reject(new LockStoreError('getGaleraNode', 'ECONNRESET', false, new Error('reset'))),
    };
    const store = new MysqlLockAdminStore(runner as unknown as MysqlStatementRunner, {} as DataSource);
    await expect(store.galeraNode()).rejects.toBeInstanceOf(LockStoreError);
  });

  it('the statements name the values of each server: capitals in information_schema, small letters in performance_schema', () => {
    expect(SELECT_GALERA_NODE.information_schema).toContain("information_schema.GLOBAL_VARIABLES WHERE VARIABLE_NAME = 'WSREP_ON'");
    expect(SELECT_GALERA_NODE.information_schema).toContain(
      "information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'WSREP_LOCAL_STATE_COMMENT'",
    );
    expect(SELECT_GALERA_NODE.performance_schema).toContain("performance_schema.global_variables WHERE VARIABLE_NAME = 'wsrep_on'");
    expect(SELECT_GALERA_NODE.performance_schema).not.toContain('information_schema');
  });
});

describe('what is wrong with a Galera node, in plain words', () => {
  const node = (change: Partial<LockGaleraNode>): LockGaleraNode => ({
    nodeName: 'n2',
    clusterStatus: 'Primary',
    localState: 'Synced',
    clusterSize: 3,
    ...change,
  });

  it('nothing for a node of the primary component that is Synced', () => {
    expect(galeraProblems(node({}))).toEqual([]);
  });

  it('a node outside the primary component refuses writes until it rejoins', () => {
    const [problem, ...more] = galeraProblems(node({ clusterStatus: 'non-Primary', localState: 'Initialized', clusterSize: 1 }));
    expect(more).toEqual([]);
    expect(problem).toContain('The Galera node n2 is not in the primary component of its cluster');
    expect(problem).toContain('wsrep_cluster_status = non-Primary, 1 node in its component');
    expect(problem).toContain('it refuses reads and writes until it rejoins');
    expect(galeraProblems(node({ clusterStatus: 'Disconnected', clusterSize: 0 }))[0]).toContain('0 nodes in its component');
  });

  it('a node that is not Synced applies the others\' writes late', () => {
    const [problem] = galeraProblems(node({ localState: 'Donor/Desynced' }));
    expect(problem).toContain('The Galera node n2 is not synced with its cluster (wsrep_local_state_comment = Donor/Desynced)');
    expect(problem).toContain('have the proxy send the connections to a Synced node');
  });
});
