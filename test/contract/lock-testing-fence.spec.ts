import { jest } from '@jest/globals';
import { Injectable } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import {
  InvalidLockArgumentError,
  LockAdminService,
  LockFence,
  type LockFenceConnection,
  LockLostError,
  LockService,
  LockTestingModule,
  type LockTransactionRunner,
  WithLocks,
} from 'nestjs-db-locks';
import { Gate } from '../support/gate.js';

/** What a unit test hands the code under test in place of a `pg` client: it records the statements it is sent. */
class RecordingClient implements LockFenceConnection {
  readonly sent: string[] = [];
  async query(sql: string): Promise<unknown> {
    this.sent.push(sql);
    return { rowCount: 1, rows: [] };
  }
}

/** The application's code under test: a repayment in its own transaction, fenced, under `@WithLocks`. */
@Injectable()
class RepaymentService {
  constructor(
    private readonly locks: LockService,
    private readonly fence: LockFence,
  ) {}

  @WithLocks({ locks: (id: number) => [`loan:${id}_WRITE`] })
  async repay(id: number, client: LockFenceConnection, pause?: Gate): Promise<number> {
    const { stamp } = this.locks.currentLock()!;
    await pause?.pass(); // the test holds the repayment here, its grant taken
    await client.query('BEGIN', []);
    await client.query('UPDATE loans SET balance = balance - 10 WHERE id = $1', [id]);
    await this.fence.fenceAndCommit(client, stamp);
    return stamp;
  }

  /** The same through a layer's transaction runner (`LockFence.transaction`), the layer's `execute` recorded. */
  @WithLocks({ locks: (id: number) => [`loan:${id}_WRITE`] })
  async repayInLayer(id: number, executed: unknown[], pause?: Gate): Promise<string> {
    const { stamp } = this.locks.currentLock()!;
    await pause?.pass();
    const runner: LockTransactionRunner<string> = {
      run: (work) => work('tx'),
      execute: async (_tx, statement) => executed.push(statement),
    };
    return this.fence.transaction(stamp, runner, async () => `repaid ${id}`);
  }
}

describe('LockTestingModule provides LockFence: the fence checks the grant in memory', () => {
  let moduleRef: TestingModule;
  beforeEach(async () => {
    moduleRef = await Test.createTestingModule({ imports: [LockTestingModule.forRoot()], providers: [RepaymentService] }).compile();
    moduleRef.useLogger(false);
    await moduleRef.init();
  });
  afterEach(async () => {
    jest.restoreAllMocks();
    await moduleRef.close();
  });

  const lastLogOf = async (stamp: number) => (await moduleRef.get(LockAdminService).getLog({ stamp }))[0];

  it('accepts a held grant: business done is recorded, COMMIT is sent on the application connection', async () => {
    const client = new RecordingClient();
    const stamp = await moduleRef.get(RepaymentService).repay(1, client);
    expect(client.sent).toEqual(['BEGIN', 'UPDATE loans SET balance = balance - 10 WHERE id = $1', 'COMMIT']);
    const entry = await lastLogOf(stamp);
    expect(entry?.status).toBe('RELEASED');
    expect(entry?.businessDoneAt).toBeInstanceOf(Date);
  });

  it('refuses a grant forced free before the fence with LockLostError: ROLLBACK instead of COMMIT, the signal told', async () => {
    const service = moduleRef.get(RepaymentService);
    const locks = moduleRef.get(LockService);
    const client = new RecordingClient();
    const gate = new Gate();
    const repaying = service.repay(2, client, gate);
    await gate.reached();
    const [grant] = await locks.getGrants();
    const signal = locks.getSignal(grant!.stamp);
    await moduleRef.get(LockAdminService).forceRelease(grant!.stamp, 'stuck repayment');
    gate.open();
    await expect(repaying).rejects.toThrow(LockLostError);
    expect(client.sent.at(-1)).toBe('ROLLBACK');
    expect(client.sent).not.toContain('COMMIT');
    expect(signal.aborted).toBe(true);
    expect(signal.reason).toBeInstanceOf(LockLostError);
    expect((await lastLogOf(grant!.stamp))?.businessDoneAt).toBeFalsy();
  });

  it('refuses a grant whose lease is over on the in-memory clock', async () => {
    const service = moduleRef.get(RepaymentService);
    const client = new RecordingClient();
    const gate = new Gate();
    const repaying = service.repay(3, client, gate);
    await gate.reached();
    const now = Date.now();
    jest.spyOn(Date, 'now').mockImplementation(() => now + 10 * 60_000); // the in-memory database's clock
    gate.open();
    await expect(repaying).rejects.toThrow(LockLostError);
    expect(client.sent).not.toContain('COMMIT');
  });

  it('in a layer transaction (LockFence.transaction): resolves for a held grant without sending SQL, rejects a forced one', async () => {
    const service = moduleRef.get(RepaymentService);
    const executed: unknown[] = [];
    await expect(service.repayInLayer(4, executed)).resolves.toBe('repaid 4');
    expect(executed).toEqual([]); // no lock tables to send the statement to

    const gate = new Gate();
    const repaying = service.repayInLayer(5, executed, gate);
    await gate.reached();
    const [grant] = await moduleRef.get(LockService).getGrants();
    await moduleRef.get(LockAdminService).forceRelease(grant!.stamp, 'stuck repayment');
    gate.open();
    await expect(repaying).rejects.toThrow(LockLostError);
  });

  it('refuses a released grant, a bad stamp and a pool as a production LockFence does', async () => {
    const locks = moduleRef.get(LockService);
    const fence = moduleRef.get(LockFence);
    const stamp = await locks.tryLocks(['LEDGER_WRITE']);
    await fence.fenceWith(stamp, async () => 1);
    await locks.releaseLocks(stamp);
    await expect(fence.fenceWith(stamp, async () => 1)).rejects.toThrow(LockLostError);
    await expect(fence.fence(new RecordingClient(), 0)).rejects.toThrow(InvalidLockArgumentError);
    const pool = Object.assign(new RecordingClient(), { totalCount: 1 });
    await expect(fence.fence(pool, stamp)).rejects.toThrow(InvalidLockArgumentError);
  });
});
