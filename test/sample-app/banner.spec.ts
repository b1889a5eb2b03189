import { clusterFromEnv, sampleBanner } from '../../sample-app/src/banner.js';
import { openSampleDatabase } from '../../sample-app/src/database/sample-database.js';
import { sampleDatabaseTarget, serverNameOf } from '../../sample-app/src/database/sample-dialect.js';

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

  it('names the server and, on MySQL/MariaDB, says that waiters of other instances poll', () => {
    const pg = sampleBanner({ ...base, server: 'PostgreSQL 15.8', dialect: 'postgres', jobs: true });
    expect(pg).toContain('database: PostgreSQL 15.8 · embedded PostgreSQL (x)');
    expect(pg.join('\n')).not.toContain('poll');
    const my = sampleBanner({
      ...base,
      database: 'DATABASE_URL (mariadb://db:3306/loans)',
      server: 'MariaDB 10.11.6',
      dialect: 'mysql',
      jobs: true,
    });
    expect(my[1]).toBe('database: MariaDB 10.11.6 · DATABASE_URL (mariadb://db:3306/loans)');
    expect(my[2]).toMatch(/^lock dialect: mysql · .*polling/);
    expect(serverNameOf('10.11.6-MariaDB-0+deb12u1')).toBe('MariaDB 10.11.6');
    expect(serverNameOf('8.0.36')).toBe('MySQL 8.0.36');
  });
});

describe('sample app: DATABASE_URL picks the dialect by its scheme', () => {
  it.each([
    ['postgres://u:secret@db/app', 'postgres', 'postgres', 'postgres://db:5432/app'],
    ['postgresql://db:6543/app', 'postgres', 'postgres', 'postgresql://db:6543/app'],
    ['mysql://root:secret@127.0.0.1/test', 'mysql', 'mysql', 'mysql://127.0.0.1:3306/test'],
    ['mariadb://root@db:3307/test', 'mysql', 'mariadb', 'mariadb://db:3307/test'],
  ])('%s → %s (%s), shown as %s', async (url, dialect, type, where) => {
    expect(sampleDatabaseTarget(url)).toEqual({ dialect, type, where });
    await expect(openSampleDatabase({ DATABASE_URL: url })).resolves.toMatchObject({
      url,
      dialect,
      source: `DATABASE_URL (${where})`,
      started: false,
    });
  });

  it('refuses any other scheme before connecting', async () => {
    await expect(openSampleDatabase({ DATABASE_URL: 'sqlite://app.db' })).rejects.toThrow(
      'DATABASE_URL must start with postgres://, postgresql://, mysql:// or mariadb:// (got sqlite://)',
    );
  });
});
