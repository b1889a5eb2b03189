/**
 * What `LockService.getHealth()` reports of this instance and its database.
 * @publicApi
 */
export interface LockHealth {
  /** True when nothing below is a problem: the instance can grant and keep its grants. */
  readonly healthy: boolean;
  /** The `appId` of the instance. */
  readonly appId: string;
  /**
   * Whether the instance holds its app id now. False while its session is broken (it takes it back on the next
   * renewal tick once the database answers) and for good once another instance took it (`fenced`).
   */
  readonly appIdHeld: boolean;
  /** True once another instance took this instance's app id: it grants nothing more until it restarts. */
  readonly fenced: boolean;
  /**
   * Whether the database answered the health probe within `queryTimeoutMs`, and `read-only` when it answered but may
   * not write (a standby, a demoted primary that a proxy still routes to: PostgreSQL `pg_is_in_recovery()` or
   * `transaction_read_only`, MySQL/MariaDB `read_only`): unhealthy, and the app id is not held there.
   */
  readonly database: 'reachable' | 'read-only' | 'unreachable';
  /**
   * The lock migrations: all of this library version's recorded as run (`current`), some not run (`outdated`), no lock
   * tables (`missing`), or `unknown` when the database did not answer.
   */
  readonly schema: 'current' | 'outdated' | 'missing' | 'unknown';
  /** For how long lease renewals have been failing (0 while they succeed); unhealthy past half a lease. */
  readonly renewalFailingForMs: number;
  /** Grants this instance holds. */
  readonly grantsHeld: number;
  /** Calls of this instance waiting for a group now. */
  readonly waiters: number;
  /** What is wrong, one sentence each, with what to do; empty when healthy. */
  readonly problems: string[];
  /**
   * The Galera node the health probe reached, when the database is one (MariaDB Galera Cluster, Percona XtraDB
   * Cluster: a server with `wsrep_on = ON`). Absent on PostgreSQL, on a MySQL or MariaDB server that is not a Galera
   * node, and when the server did not answer the question. A node outside the primary component of its cluster, or
   * not `Synced`, makes the instance unhealthy, with a sentence in `problems`.
   */
  readonly galera?: LockGaleraNode;
}

/**
 * A node of a Galera cluster (MariaDB Galera Cluster, Percona XtraDB Cluster) as the server reports itself, in one
 * statement: its `wsrep_*` variables and status values. `LockService.getHealth()` and
 * `LockAdminService.getGaleraNode()` give it; the command line's `status` prints it.
 * @publicApi
 */
export interface LockGaleraNode {
  /** `wsrep_node_name`: the node's name in its cluster (the server's host name unless configured). */
  readonly nodeName: string;
  /**
   * `wsrep_cluster_status`: `Primary` when the node is in the primary component of its cluster (the part that holds a
   * majority of the nodes and accepts writes); `non-Primary` when it lost that majority (a network split, the other
   * nodes gone): it then refuses reads and writes until it rejoins; `Disconnected` when it is in no cluster.
   */
  readonly clusterStatus: string;
  /**
   * `wsrep_local_state_comment`: `Synced` when the node applies the cluster's writes as they come; `Joining`,
   * `Joined` or `Waiting on SST` while it catches up after a start or a split, `Donor/Desynced` while it sends a
   * state transfer to another node or was desynchronized by hand (`wsrep_desync`), `Initialized` outside a primary
   * component.
   */
  readonly localState: string;
  /** `wsrep_cluster_size`: how many nodes the node's component has now (1 for a node cut off from the others). */
  readonly clusterSize: number;
}

