import { Injectable } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import {
  LockAdminService,
  type LockFenceStatement,
  LockLostError,
  LockService,
  LockTestingModule,
  type LockTransactionRunner,
  WithLocks,
} from 'nestjs-db-locks';
import { Gate } from '../support/gate.js';

/** The fake layer's transaction object: the writes it commits. */
interface FakeTx {
  readonly id: number;
  readonly writes: string[];
}

/** A fake runner of the application's data layer: records its transactions' begin, commit and rollback. */
@Injectable()
class RecordingRunner implements LockTransactionRunner<FakeTx> {
  readonly events: string[] = [];
  readonly committed: string[] = [];
  readonly executed: LockFenceStatement[] = [];
  private opened = 0;

  async run<T>(work: (tx: FakeTx) => Promise<T>): Promise<T> {
    const tx: FakeTx = { id: ++this.opened, writes: [] };
    this.events.push(`begin ${tx.id}`);
    try {
      const value = await work(tx);
      this.committed.push(...tx.writes);
      this.events.push(`commit ${tx.id}`);
      return value;
    } catch (error) {
      this.events.push(`rollback ${tx.id}`);
      throw error;
    }
  }

  async execute(_tx: unknown, statement: LockFenceStatement): Promise<unknown> {
    this.executed.push(statement);
    return 1;
  }
}

@Injectable()
class AuditService {
  constructor(private readonly locks: LockService) {}

  @WithLocks({ locks: ['AUDIT_WRITE'], transaction: { runner: RecordingRunner } })
  async record(entry: string): Promise<number> {
    const tx = this.locks.currentTransaction<FakeTx>(RecordingRunner);
    tx.writes.push(entry);
    return tx.id;
  }
}

@Injectable()
class LoanService {
  constructor(
    private readonly locks: LockService,
    private readonly audit: AuditService,
  ) {}

  @WithLocks({ locks: (id: number) => [`loan:${id}_WRITE`], transaction: { runner: RecordingRunner } })
  async repay(id: number, gate?: Gate): Promise<{ tx: number; auditTx: number; stamp: number }> {
    const tx = this.locks.currentTransaction<FakeTx>(RecordingRunner);
    tx.writes.push(`repay ${id}`);
    const auditTx = await this.audit.record(`repaid ${id}`);
    await gate?.pass(); // holds both grants here, until the test opens the gate
    return { tx: tx.id, auditTx, stamp: this.locks.currentLock()!.stamp };
  }
}

describe('LockTestingModule: @WithLocks({ transaction: { runner } }) fenced in memory', () => {
  let moduleRef: TestingModule | undefined;
  afterEach(async () => {
    await moduleRef?.close();
    moduleRef = undefined;
  });

  async function start(): Promise<TestingModule> {
    moduleRef = await Test.createTestingModule({
      imports: [LockTestingModule.forRoot()],
      providers: [LoanService, AuditService, RecordingRunner],
    }).compile();
    moduleRef.useLogger(false);
    await moduleRef.init();
    return moduleRef;
  }

  it('commits the runner\'s transaction while the grant is held, marked business done in memory, nothing sent through execute', async () => {
    const ref = await start();
    const runner = ref.get(RecordingRunner);
    const result = await ref.get(LoanService).repay(1);
    expect(runner.events).toEqual(['begin 1', 'commit 1']);
    expect(runner.committed).toEqual(['repay 1', 'repaid 1']);
    expect(runner.executed).toEqual([]);
    const [entry] = await ref.get(LockAdminService).getLog({ name: 'loan:1' });
    expect(entry).toMatchObject({ stamp: result.stamp, status: 'RELEASED' });
    expect(entry!.businessDoneAt).toBeInstanceOf(Date);
    expect(await ref.get(LockService).getGrants()).toEqual([]);
  });

  it('a nested call joins the transaction: one begin, one commit, the same transaction object', async () => {
    const ref = await start();
    const result = await ref.get(LoanService).repay(2);
    expect(result).toMatchObject({ tx: 1, auditTx: 1 });
    expect(ref.get(RecordingRunner).events).toEqual(['begin 1', 'commit 1']);
    const [audit] = await ref.get(LockAdminService).getLog({ name: 'AUDIT' });
    expect(audit!.businessDoneAt).toBeInstanceOf(Date); // the nested grant is fenced with the transaction
  });

  /** Repays loan `id`, forcing the grant on `forced` free while the method holds its grants; the runner's record. */
  async function repayForced(id: number, forced: string): Promise<{ ref: TestingModule; runner: RecordingRunner }> {
    const ref = await start();
    const gate = new Gate();
    const call = ref.get(LoanService).repay(id, gate);
    await gate.reached();
    const [grant] = await ref.get(LockService).getGrants({ name: forced });
    await ref.get(LockAdminService).forceRelease(grant!.stamp, 'test: taken away');
    gate.open();
    await expect(call).rejects.toThrow(LockLostError);
    return { ref, runner: ref.get(RecordingRunner) };
  }

  it('rolls the transaction back and fails with LockLostError when the grant is forced free before the commit', async () => {
    const { ref, runner } = await repayForced(3, 'loan:3');
    expect(runner.events).toEqual(['begin 1', 'rollback 1']);
    expect(runner.committed).toEqual([]);
    expect(runner.executed).toEqual([]);
    expect((await ref.get(LockAdminService).getLog({ name: 'loan:3' }))[0]!.businessDoneAt).toBeNull();
  });

  it('rolls back when the nested call\'s grant is forced free before the outer commit', async () => {
    const { runner } = await repayForced(4, 'AUDIT');
    expect(runner.events).toEqual(['begin 1', 'rollback 1']);
    expect(runner.committed).toEqual([]);
  });
});
