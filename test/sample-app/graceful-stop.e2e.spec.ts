import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expectGracefulCtrlC } from './support/graceful-stop.js';

/**
 * Ctrl+C of `npm start` on embedded PostgreSQL, with a repayment in flight. The terminal signals the whole process
 * group; the database must not be in it (it would stop under the draining app: 57P03 on its last statements), and it
 * stops only after the app has closed.
 */
describe('sample app: Ctrl+C drains on embedded PostgreSQL', () => {
  let dataDir: string;

  beforeAll(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'ndl-sample-stop-'));
  });
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it('answers the repayment in flight, releases its lock, exits 0 with no error, then stops PostgreSQL', async () => {
    const pg = join(dataDir, 'pg');
    const { duringDrain } = await expectGracefulCtrlC({ SAMPLE_DATA_DIR: pg }, async () => {
      expect(existsSync(join(pg, 'PG_VERSION'))).toBe(true);
      expect(existsSync(join(pg, 'postmaster.pid'))).toBe(false); // the server was stopped, and cleanly
    });
    expect(duringDrain).toBe(503);
  }, 240_000);
});
