import type { SampleDialect } from './database/sample-dialect.js';

/** How this process was started: alone (`npm start`), or as one instance of `npm run start:cluster`. */
export interface BannerInput {
  readonly appId: string;
  readonly pid: number;
  /** The console's address. */
  readonly url: string;
  /** Where the database is, in words (`embedded PostgreSQL (.data/sample-pg)`, `DATABASE_URL (postgres://host:5432/db)`). */
  readonly database: string;
  /** The server as it names itself (`PostgreSQL 15.8`, `MariaDB 10.11.6`), when known. */
  readonly server?: string;
  /** The dialect the sample and the lock library run in (default `postgres`). */
  readonly dialect?: SampleDialect;
  /** Whether the scheduled jobs and the simulated traffic run. */
  readonly jobs: boolean;
  /** Set when `npm run start:cluster` started this process. */
  readonly cluster?: { readonly pid: number; readonly instances: number };
}

/**
 * The lines an instance prints once it listens: who it is, where its console and its database are (which server,
 * and on MySQL / MariaDB how waiting differs), and how to stop it — or, in a cluster, how to stop the cluster and
 * how to watch this instance's locks come back after a crash.
 */
export function sampleBanner(input: BannerInput): string[] {
  const jobs = input.jobs ? '' : ' (jobs off)';
  const database = `database: ${input.server ? `${input.server} · ` : ''}${input.database}`;
  const polling = "a waiter sees other instances' releases by polling (MySQL/MariaDB has no LISTEN/NOTIFY)";
  const dialect = input.dialect === 'mysql' ? [`lock dialect: mysql · ${polling}`] : [];
  if (input.cluster) {
    return [
      `nestjs-db-locks sample · instance ${input.appId}, pid ${input.pid}${jobs} · ` +
        `one of ${input.cluster.instances} instances of the cluster (pid ${input.cluster.pid})`,
      `${database}, shared by the cluster`,
      ...dialect,
      `lock console: ${input.url}`,
      `stop the cluster: Ctrl+C, or kill ${input.cluster.pid} · crash this instance: kill -9 ${input.pid} ` +
        `(its locks come back; the cluster restarts it)`,
    ];
  }
  return [
    `nestjs-db-locks sample · instance ${input.appId}, pid ${input.pid}${jobs}`,
    database,
    ...dialect,
    `lock console: ${input.url}`,
    `stop: Ctrl+C · several instances on one database: npm run start:cluster`,
  ];
}

/** The environment `start:cluster` hands each instance, read back by `main.ts`. */
export const CLUSTER_ENV = {
  /** The cluster process's pid. */
  pid: 'SAMPLE_CLUSTER_PID',
  /** How many instances the cluster runs. */
  instances: 'SAMPLE_CLUSTER_INSTANCES',
  /** The cluster's database in words (the instances only see the `DATABASE_URL` it hands them). */
  database: 'SAMPLE_CLUSTER_DATABASE',
} as const;

/** The cluster this process belongs to, from its environment, or `undefined` when it runs alone. */
export function clusterFromEnv(env: NodeJS.ProcessEnv): { pid: number; instances: number; database?: string } | undefined {
  const pid = Number(env[CLUSTER_ENV.pid]);
  const instances = Number(env[CLUSTER_ENV.instances]);
  if (!Number.isSafeInteger(pid) || pid <= 0 || !Number.isSafeInteger(instances) || instances <= 0) return undefined;
  return { pid, instances, database: env[CLUSTER_ENV.database] || undefined };
}
