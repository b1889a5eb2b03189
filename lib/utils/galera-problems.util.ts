import type { LockGaleraNode } from '../interfaces/index.js';

/**
 * What is wrong with a Galera node for the locks, one sentence each with what to do (empty when it is in the primary
 * component and `Synced`): the health check's problems, and the command line's note when the node refuses its reads.
 * @internal
 */
export function galeraProblems(node: LockGaleraNode): string[] {
  const name = node.nodeName ? `The Galera node ${node.nodeName}` : 'The Galera node';
  if (node.clusterStatus !== 'Primary') {
    const nodes = `${node.clusterSize} node${node.clusterSize === 1 ? '' : 's'}`;
    return [
      `${name} is not in the primary component of its cluster (wsrep_cluster_status = ${node.clusterStatus}, ` +
        `${nodes} in its component): it refuses reads and writes until it rejoins, so grants, releases and lease ` +
        'renewals through it fail meanwhile. Check the network between the nodes, or have the proxy send the ' +
        'connections to a node of the primary component.',
    ];
  }
  if (node.localState !== 'Synced') {
    return [
      `${name} is not synced with its cluster (wsrep_local_state_comment = ${node.localState}): it is joining, ` +
        'catching up, sending a state transfer to another node or desynchronized for a backup, and applies the other ' +
        "nodes' writes late: grants through it may be slow or refused until it is Synced. If it lasts, have the proxy " +
        'send the connections to a Synced node.',
    ];
  }
  return [];
}
