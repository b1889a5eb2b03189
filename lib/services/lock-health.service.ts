import { Inject, Injectable } from '@nestjs/common';
import { LockAdminService } from '../admin/lock-admin.service.js';
import type { LockGaleraNode, LockHealth, LockSchemaStatus } from '../interfaces/index.js';
import { RESOLVED_LOCK_OPTIONS } from '../lock.constants.js';
import { LockStore } from '../store/lock.store.js';
import { galeraProblems } from '../utils/galera-problems.util.js';
import type { ResolvedLockOptions } from '../utils/resolve-lock-options.util.js';
import { InstanceLock } from './instance-lock.service.js';
import { LockAcquisitions } from './lock-acquisitions.service.js';
import { LockLeases } from './lock-leases.service.js';

/** The probe's answer: the schema's status and the server's problems, or why the database did not give them. */
type Probe =
  | { readonly status: LockSchemaStatus; readonly server: readonly string[]; readonly readOnly: string | undefined }
  | { readonly failure: string };

/**
 * The health of this instance (`LockService.getHealth()`): it is down when it does not hold its app id, when the
 * database does not answer a probe in time, when the server may not write (a standby, a demoted primary), when the lock schema is missing or behind this library version, when the
 * server's settings or the lock user's privileges keep grants from working (`LockStore.checkServer`, on the probe's
 * connection), when acquisitions were refused by the configuration (`LockRefusals`: on connections the probe may not
 * get), or when lease renewals have been failing for more than half a lease (its grants are about to be reported
 * lost). On a Galera node it also reports the node (`galera`), and is down when the node is outside the primary
 * component of its cluster or not `Synced`.
 * @internal
 */
@Injectable()
export class LockHealthCheck {
  constructor(
    private readonly instanceLock: InstanceLock,
    private readonly leases: LockLeases,
    private readonly admin: LockAdminService,
    private readonly acquisitions: LockAcquisitions,
    @Inject(LockStore) private readonly store: LockStore,
    @Inject(RESOLVED_LOCK_OPTIONS) private readonly options: ResolvedLockOptions,
  ) {}

  /** Checks now; `waiters` is the number of waits under way in the service. Never rejects, never hangs. */
  async check(waiters: number): Promise<LockHealth> {
    const { appId, leaseMs, queryTimeoutMs } = this.options;
    const problems: string[] = [];
    const fenced = this.instanceLock.fencedBy;
    const appIdHeld = this.instanceLock.held;
    if (fenced) {
      problems.push(`${fenced.message} This instance grants nothing more: restart it with an appId of its own.`);
    } else if (!appIdHeld && this.instanceLock.readOnly !== undefined) {
      problems.push(
        `The instance does not hold its app id "${appId}": ${this.instanceLock.readOnly}. It grants nothing until a ` +
          'writable server answers (the proxy moves to the new primary, or the server accepts writes again).',
      );
    } else if (!appIdHeld) {
      problems.push(
        `The instance does not hold its app id "${appId}" (its session broke): it grants nothing until it takes it ` +
          'back, which it does on its next renewal once the database answers.',
      );
    }
    // The node first: outside the primary component it refuses the probe's reads of the lock tables, and says why.
    const [probe, galera] = await Promise.all([this.probe(queryTimeoutMs), this.galeraNode(queryTimeoutMs)]);
    if (galera) problems.push(...galeraProblems(galera));
    const schema = 'status' in probe ? schemaOf(probe.status) : 'unknown';
    if ('failure' in probe) problems.push(`The database did not answer the health probe: ${probe.failure}`);
    else if (schema === 'missing') {
      problems.push('The lock tables are missing: run LOCK_MIGRATIONS (or lockMigrations({ schema })) on the database.');
    } else if (schema === 'outdated') {
      problems.push(`Lock migrations not run on the database: ${probe.status.pending.join(', ')}; run LOCK_MIGRATIONS.`);
    }
    if ('server' in probe) problems.push(...probe.server);
    const refused = this.acquisitions.refusals.problem(leaseMs);
    if (refused !== undefined) problems.push(refused);
    const readOnly = 'readOnly' in probe && probe.readOnly !== undefined;
    if (readOnly && appIdHeld) {
      problems.push(
        `The database server may not write (${probe.readOnly}): a standby, or a primary being demoted; every grant ` +
          'and release fails until a writable server answers.',
      );
    }
    const renewalFailingForMs = this.leases.renewalFailingForMs();
    if (renewalFailingForMs > leaseMs / 2) {
      problems.push(
        `Lease renewals have failed for ${Math.round(renewalFailingForMs)} ms, more than half the lease ` +
          `(${leaseMs} ms): the grants of this instance will be reported lost at the end of their lease.`,
      );
    }
    return {
      healthy: problems.length === 0,
      appId,
      appIdHeld,
      fenced: fenced !== undefined,
      database: 'failure' in probe ? 'unreachable' : readOnly ? 'read-only' : 'reachable',
      schema,
      renewalFailingForMs,
      grantsHeld: this.leases.size,
      waiters,
      problems,
      ...(galera && { galera }),
    };
  }

  /**
   * The Galera node the pool reaches, undefined when the server is none, or when it did not say within `timeoutMs`
   * (the probe reports a database that does not answer).
   */
  private async galeraNode(timeoutMs: number): Promise<LockGaleraNode | undefined> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<undefined>((resolve) => {
      timer = setTimeout(() => resolve(undefined), timeoutMs);
    });
    try {
      return await Promise.race([this.admin.getGaleraNode().catch(() => undefined), timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Reads the schema's status, giving up after `timeoutMs` (a connection that cannot be had is never awaited). */
  private async probe(timeoutMs: number): Promise<Probe> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<Probe>((resolve) => {
      timer = setTimeout(() => resolve({ failure: `no answer within ${timeoutMs} ms` }), timeoutMs);
    });
    const asked = Promise.all([this.admin.getSchemaStatus(), this.store.checkServer(), this.store.readOnlyReason()]).then(
      ([status, server, readOnly]): Probe => ({ status, server, readOnly }),
      (error: unknown): Probe => ({ failure: error instanceof Error ? error.message : String(error) }),
    );
    try {
      return await Promise.race([asked, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }
}

function schemaOf(status: LockSchemaStatus): LockHealth['schema'] {
  if (!status.tablesPresent) return 'missing';
  return status.pending.length > 0 ? 'outdated' : 'current';
}
