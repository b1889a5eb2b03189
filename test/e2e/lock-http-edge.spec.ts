import { Controller, Get } from '@nestjs/common';
import { WithLocks } from 'nestjs-db-locks';
import { createNestApp, type TestNestApp } from '../support/nest-app.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';

@Controller('rates')
class RatesController {
  @Get()
  @WithLocks({ locks: ['RATES_READ'], retryAfterSeconds: 7 })
  async read(): Promise<{ ok: true }> {
    return { ok: true };
  }
}

describe.each(['express', 'fastify'] as const)('the HTTP edge on %s', (platform) => {
  let db: TestDatabase;
  let api: TestNestApp;

  beforeAll(async () => {
    db = await createTestDatabase();
    api = await createNestApp(db.url, { appId: `api-${platform}` }, { controllers: [RatesController], platform });
  });
  afterAll(async () => {
    await api.close();
    await db.drop();
  });

  it('answers 423 with Retry-After while the lock is held elsewhere, 200 after', async () => {
    const stamp = await api.locks.tryLocks(['RATES_WRITE']);
    const locked = await fetch(`${api.baseUrl}/rates`);
    expect(locked.status).toBe(423);
    expect(locked.headers.get('retry-after')).toBe('7');
    expect(await locked.json()).toMatchObject({ statusCode: 423, error: 'Locked', locks: [{ name: 'RATES', mode: 'read' }] });
    await api.locks.releaseLocks(stamp);
    const open = await fetch(`${api.baseUrl}/rates`);
    expect(open.status).toBe(200);
  });

  it('answers 503 with Retry-After when the lock database cannot be reached', async () => {
    await db.refuseConnections(true); // as in a restart or a failover
    try {
      const response = await fetch(`${api.baseUrl}/rates`);
      expect(response.status).toBe(503);
      expect(response.headers.get('retry-after')).toBe('1');
      expect(await response.json()).toMatchObject({ statusCode: 503, error: 'Service Unavailable' });
    } finally {
      await db.refuseConnections(false);
    }
    // The instance lost its own session too: the next request takes the app id back first, then the lock.
    const back = await fetch(`${api.baseUrl}/rates`);
    expect(back.status).toBe(200);
    expect(await db.query(`SELECT 1 FROM pg_stat_activity WHERE application_name LIKE 'nestjs-db-locks api-%'`)).toHaveLength(1);
  });
});
