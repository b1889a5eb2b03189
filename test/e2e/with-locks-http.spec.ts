import { Controller, Get, NotFoundException, Param } from '@nestjs/common';
import { WithLocks } from 'nestjs-db-locks';
import { from, map, switchMap, throwError, timer, type Observable } from 'rxjs';
import { lockRows } from '../support/lock-rows.js';
import { createNestApp, type TestNestApp } from '../support/nest-app.js';
import { DIALECTS } from '../support/dialects.js';
import type { TestDatabase } from '../support/test-database.js';

let db: TestDatabase;

@Controller('ws1')
class Ws1Controller {
  /** Route decorator above @WithLocks. */
  @Get('report')
  @WithLocks({ locks: ['WS1_READ'], retryAfterSeconds: 7 })
  async report(): Promise<{ rows: number }> {
    // Runs under the lock: the lock row exists while the handler runs.
    return { rows: (await lockRows(db)).length };
  }

  /** Route decorator below @WithLocks. */
  @WithLocks('WS1_READ', 'AUDIT_WRITE')
  @Get('audit/:id')
  async audit(@Param('id') id: string): Promise<{ id: string }> {
    if (id === 'missing') throw new NotFoundException(`no audit ${id}`);
    return { id };
  }

  @Get('stream')
  @WithLocks('WS1_READ')
  stream(): Observable<{ rowsWhileStreaming: number }> {
    // The value is produced after the method returned: the lock must still be held then.
    return timer(20).pipe(
      switchMap(() => from(lockRows(db))),
      map((rows) => ({ rowsWhileStreaming: rows.length })),
    );
  }

  @Get('broken-stream')
  @WithLocks('WS1_READ')
  brokenStream(): Observable<never> {
    return throwError(() => new NotFoundException('gone'));
  }
}

for (const dialect of DIALECTS) dialect.describe(`@WithLocks on controllers (two application instances, one database) on ${dialect.name}`, () => {
  let api: TestNestApp;
  let rebuilder: TestNestApp;

  beforeAll(async () => {
    db = await dialect.createDatabase();
    api = await createNestApp(db.url, { appId: 'ws1-api' }, { controllers: [Ws1Controller] });
    rebuilder = await createNestApp(db.url, { appId: 'ws1-rebuild' }, { controllers: [Ws1Controller] });
  });
  afterAll(async () => {
    await api.close();
    await rebuilder.close();
    await db.drop();
  });
  afterEach(async () => {
    expect(await lockRows(db)).toEqual([]); // every lock released after every request
  });

  it('serves 200 under the lock and releases it before the response is sent', async () => {
    const response = await fetch(`${api.baseUrl}/ws1/report`);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ rows: 1 });
  });

  it('answers 423 Locked, naming the locks, while another instance rebuilds; 200 after', async () => {
    const stamp = await rebuilder.locks.tryLocks(['WS1_WRITE']);
    try {
      const locked = await fetch(`${api.baseUrl}/ws1/report`);
      expect(locked.status).toBe(423);
      expect(locked.headers.get('retry-after')).toBe('7');
      expect(await locked.json()).toMatchObject({
        statusCode: 423,
        error: 'Locked',
        locks: [{ name: 'WS1', mode: 'read' }],
      });
      const lockedToo = await fetch(`${api.baseUrl}/ws1/audit/1`);
      expect(lockedToo.status).toBe(423);
      expect(lockedToo.headers.get('retry-after')).toBeNull();
    } finally {
      await rebuilder.locks.releaseLocks(stamp);
    }
    expect((await fetch(`${api.baseUrl}/ws1/report`)).status).toBe(200);
  });

  it('keeps the route whichever side of the route decorator it sits, and passes user exceptions unchanged', async () => {
    const ok = await fetch(`${api.baseUrl}/ws1/audit/42`);
    expect(ok.status).toBe(200);
    expect(await ok.json()).toEqual({ id: '42' });
    const missing = await fetch(`${api.baseUrl}/ws1/audit/missing`);
    expect(missing.status).toBe(404);
    expect(await missing.json()).toMatchObject({ message: 'no audit missing' });
  });

  it('holds the lock for the life of a returned Observable, and releases it on its error', async () => {
    const streamed = await fetch(`${api.baseUrl}/ws1/stream`);
    expect(streamed.status).toBe(200);
    expect(await streamed.json()).toEqual({ rowsWhileStreaming: 1 });
    const broken = await fetch(`${api.baseUrl}/ws1/broken-stream`);
    expect(broken.status).toBe(404);
  });
});
