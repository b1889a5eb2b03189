import { LeaderService } from 'nestjs-db-locks';
import { DIALECTS } from '../support/dialects.js';
import { createLockApp } from '../support/lock-app.js';
import { total } from '../support/otel-sdk.js';
import { useMeteredFleet } from '../support/metered-fleet.js';
import { until } from '../support/until.js';

const M = (name: string) => `nestjs_db_locks.leader.${name}`;

/** Work that leads until its signal fires. */
const leadUntilTold = (signal: AbortSignal) => new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve()));

/**
 * The leadership metrics as a dashboard reads them from two replicas: which one leads (`is_leader`), the term it leads
 * in (`term`), the elections each won and the terms that ended by reason, before and after hand-overs by resign and by
 * shutdown.
 */
for (const dialect of DIALECTS) dialect.describe(`leader election's metrics on ${dialect.name}`, () => {
  const fleet = useMeteredFleet(dialect);
  const { apps } = fleet;

  it('shows one replica leading, its term, and counts elections and ended terms through hand-overs', async () => {
    for (const appId of ['metered-a', 'metered-b']) apps.push(await createLockApp(fleet.db.url, { appId }));
    const [a, b] = apps.map((app) => app.app.get(LeaderService)) as [LeaderService, LeaderService];
    const role = 'metered-role';
    const read = async (name: string, appId: string, extra: Record<string, string> = {}) =>
      total(await fleet.sdk.collect(), M(name), { role, 'app.id': appId, ...extra });

    a.campaign(role, leadUntilTold);
    await until(() => a.isLeader(role));
    b.campaign(role, leadUntilTold);
    const token = a.term(role)!.token;
    expect(await read('is_leader', 'metered-a')).toBe(1);
    expect(await read('is_leader', 'metered-b')).toBe(0);
    expect(await read('term', 'metered-a')).toBe(token);
    expect(await read('term', 'metered-b')).toBe(0);
    expect(await read('elections', 'metered-a')).toBe(1);
    expect(await read('elections', 'metered-b')).toBe(0);

    await a.resign(role);
    await until(() => b.isLeader(role));
    expect(await read('is_leader', 'metered-a')).toBe(0); // resigned: 0, not the last value it had
    expect(await read('is_leader', 'metered-b')).toBe(1);
    expect(await read('term', 'metered-a')).toBe(0);
    expect(await read('term', 'metered-b')).toBe(token + 1);
    expect(await read('elections', 'metered-b')).toBe(1);
    expect(await read('terms_ended', 'metered-a', { reason: 'resigned' })).toBe(1);
    expect(await read('terms_ended', 'metered-b')).toBe(0);

    await apps.splice(1)[0]!.close();
    expect(await read('terms_ended', 'metered-b', { reason: 'shutdown' })).toBe(1);
  });
});
