import { clusterFromEnv, sampleBanner } from '../../sample-app/src/banner.js';

describe('sample app: start-up banner', () => {
  const base = { appId: 'sample-2', pid: 4242, url: 'http://127.0.0.1:3001/', database: 'embedded PostgreSQL (x)' };

  it('names a lone instance and tells how to stop it and how to start a cluster', () => {
    const lines = sampleBanner({ ...base, jobs: true });
    expect(lines[0]).toBe('nestjs-db-locks sample · instance sample-2, pid 4242');
    expect(lines).toContain('database: embedded PostgreSQL (x)');
    expect(lines.join('\n')).toMatch(/stop: Ctrl\+C .* npm run start:cluster/);
  });

  it('in a cluster, names the instance and the cluster, and tells how to stop the cluster, not how to start one', () => {
    const cluster = clusterFromEnv({
      SAMPLE_CLUSTER_PID: '100',
      SAMPLE_CLUSTER_INSTANCES: '3',
      SAMPLE_CLUSTER_DATABASE: 'embedded PostgreSQL (.data/sample-pg)',
    });
    expect(cluster).toEqual({ pid: 100, instances: 3, database: 'embedded PostgreSQL (.data/sample-pg)' });
    const text = sampleBanner({ ...base, database: cluster?.database ?? '?', jobs: false, cluster }).join('\n');
    expect(text).toContain('instance sample-2, pid 4242 (jobs off) · one of 3 instances of the cluster (pid 100)');
    expect(text).toContain('database: embedded PostgreSQL (.data/sample-pg), shared by the cluster');
    expect(text).toContain('stop the cluster: Ctrl+C, or kill 100');
    expect(text).toContain('kill -9 4242');
    expect(text).not.toContain('npm run start:cluster');
    expect(text).not.toContain('DATABASE_URL');
  });

  it('runs alone when the cluster variables are missing or malformed', () => {
    expect(clusterFromEnv({})).toBeUndefined();
    expect(clusterFromEnv({ SAMPLE_CLUSTER_PID: 'x', SAMPLE_CLUSTER_INSTANCES: '3' })).toBeUndefined();
  });
});
