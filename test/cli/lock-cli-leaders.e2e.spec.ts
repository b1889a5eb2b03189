import { LeaderService, type LockLeaderInfo } from 'nestjs-db-locks';
import { runCli } from '../support/cli-process.js';
import { DIALECTS } from '../support/dialects.js';
import { createLockApp, type LockApp } from '../support/lock-app.js';
import type { TestDatabase } from '../support/test-database.js';
import { until } from '../support/until.js';

/** Work that leads until its signal fires. */
const leadUntilTold = (signal: AbortSignal) => new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve()));

/**
 * `nestjs-db-locks leaders`, the built command line run as a child process against live replicas, as an operator runs
 * it: each role's leader, since when, its term and the candidates in order, in the table and in `--json`, before and
 * after a hand-over; a bad role is refused before any connection.
 */
for (const dialect of DIALECTS) dialect.describe(`nestjs-db-locks leaders on ${dialect.name}`, () => {
  let db: TestDatabase;
  const apps: LockApp[] = [];
  let env: Record<string, string>;
  const start = async (appId: string) => {
    const app = await createLockApp(db.url, { appId, instance: `${appId}-pid` });
    apps.push(app);
    return app;
  };
  const json = async (...args: string[]): Promise<LockLeaderInfo[]> => {
    const run = await runCli(['leaders', '--json', ...args], env);
    expect(run).toMatchObject({ code: 0, stderr: '' });
    return JSON.parse(run.stdout) as LockLeaderInfo[];
  };

  beforeAll(async () => {
    db = await dialect.createDatabase();
    env = { DATABASE_URL: db.url };
  });
  afterAll(async () => {
    await Promise.all(apps.map((app) => app.close()));
    await db?.drop();
  });

  it('shows the leader, its term, since when and the candidates in order; after a resign, the next leader and term', async () => {
    const empty = await runCli(['leaders'], env);
    expect(empty).toMatchObject({ code: 0, stdout: 'No role has been led or waited for yet.\n' });

    const [one, two, three] = [await start('one'), await start('two'), await start('three')];
    const leaders = (app: LockApp) => app.app.get(LeaderService);
    leaders(one).campaign('outbox-relay', leadUntilTold);
    await until(() => leaders(one).isLeader('outbox-relay'));
    leaders(two).campaign('outbox-relay', leadUntilTold);
    await until(async () => (await json())[0]?.candidates.length === 1, 10_000);
    leaders(three).campaign('outbox-relay', leadUntilTold);
    await until(async () => (await json())[0]?.candidates.length === 2, 10_000);
    const term = leaders(one).term('outbox-relay')!;

    const [info] = await json('--role', 'outbox-relay');
    expect(info).toMatchObject({
      role: 'outbox-relay',
      leader: { appId: 'one', instance: 'one-pid', term: term.token },
      term: term.token,
      candidates: [
        { position: 1, appId: 'two' },
        { position: 2, appId: 'three' },
      ],
    });
    expect(Math.abs(Date.parse(info!.leader!.since as unknown as string) - term.since.getTime())).toBeLessThanOrEqual(1);

    const text = await runCli(['leaders'], env);
    expect(text).toMatchObject({ code: 0, stderr: '' });
    expect(text.stdout).toMatch(/^ROLE\s+LEADER\s+INSTANCE\s+SINCE\s+TERM\s+LEASE LEFT\s+CANDIDATES \(IN ORDER\)$/m);
    const since = term.since.toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z');
    expect(text.stdout).toMatch(new RegExp(`^outbox-relay\\s+one\\s+one-pid\\s+${since}\\s+${term.token}\\s+\\d+\\.\\d s\\s+two, three$`, 'm'));

    await leaders(one).resign('outbox-relay');
    await until(() => leaders(two).isLeader('outbox-relay'));
    const after = await runCli(['leaders', '--role', 'outbox-relay'], env);
    expect(after.stdout).toMatch(new RegExp(`^outbox-relay\\s+two\\s+two-pid\\s+\\S+ \\S+\\s+${term.token + 1}\\s+\\S+ s\\s+three$`, 'm'));

    await leaders(two).resign('outbox-relay');
    await until(() => leaders(three).isLeader('outbox-relay'));
    await leaders(three).resign('outbox-relay');
    const vacant = await runCli(['leaders'], env);
    expect(vacant.stdout).toMatch(new RegExp(`^outbox-relay\\s+none\\s+-\\s+-\\s+${term.token + 2} \\(ended\\)\\s+-\\s+-$`, 'm'));
    expect((await runCli(['leaders', '--role', 'nobody'], env)).stdout).toBe('No role nobody.\n');
  });

  it('no longer shows a leader whose lease is over by the database clock, before any reaper has freed its grant', async () => {
    // No reaper runs during the test; the lease is long, so the leader does not renew it meanwhile.
    const frozen = await createLockApp(db.url, { appId: 'frozen', leaseMs: 60_000, reaperIntervalMs: 600_000 });
    apps.push(frozen);
    const leaders = frozen.app.get(LeaderService);
    leaders.campaign('frozen-role', leadUntilTold);
    await until(() => leaders.isLeader('frozen-role'));
    const [before] = await json('--role', 'frozen-role');
    expect(before!.leader).toMatchObject({ appId: 'frozen', term: 1 });
    // What the database sees of a leader that stopped renewing (its process froze): the lease ended, the rows stay.
    const past = dialect.name === 'PostgreSQL' ? "now() - interval '1 second'" : 'UTC_TIMESTAMP(6) - INTERVAL 1 SECOND';
    await db.query(`UPDATE locking_log SET lease_expires = ${past} WHERE stamp = ${before!.leader!.stamp}`);
    const [after] = await json('--role', 'frozen-role');
    expect(after).toEqual({ role: 'frozen-role', leader: null, term: 1, candidates: [] });
  });

  it('refuses a bad role with exit code 2, before connecting', async () => {
    const run = await runCli(['leaders', '--role', 'ends with a space '], { DATABASE_URL: db.url.replace(/@[^/]+\//, '@127.0.0.1:1/') });
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr).toContain('invalid role');
  });
});
