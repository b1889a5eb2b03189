import type { LockGrant, LockLogEntry } from 'nestjs-db-locks';
import type { LoanOperationEntity } from '../../../sample-app/src/loans/loan-operation.entity.js';
import { call, eventually, type JsonResponse } from './sample-instance.js';
import { killSampleProcess, type SampleProcess, startSampleProcess } from './sample-process.js';

/** How long the repayment's "bank transfer" takes: long enough to press Ctrl+C in the middle of it, and to ask for
 * more while it drains, on a loaded machine. */
const REPAYMENT_MS = 3000;

/** What a terminal's Ctrl+C did to a sample with a repayment in flight. */
export interface CtrlCOutcome {
  /** The stamp of the repayment's grant on `loan:1`. */
  readonly stamp: number;
  /** The answer of a request made while the sample drained. */
  readonly duringDrain: number;
}

/**
 * `npm start` (the built sample, in a process group of its own), `GET /health` up, then a repayment of loan 1 and
 * Ctrl+C while it holds `loan:1`: the repayment is answered 201 with its operation, a request sent meanwhile 503, the
 * process exits 0 with no error nor stack trace in its output. `afterExit` checks what only the caller knows (the
 * embedded server stopped). Then a second instance (another app id, same database) finds no grant left, the
 * repayment's log row RELEASED by its holder (not reaped, not recovered), and takes `loan:1` for a repayment itself.
 */
export async function expectGracefulCtrlC(
  env: Record<string, string>,
  afterExit: () => Promise<void> = async () => undefined,
): Promise<CtrlCOutcome> {
  const base = { SAMPLE_JOBS: 'off', REPAYMENT_MS: String(REPAYMENT_MS), ...env };
  let first: SampleProcess | undefined;
  let second: SampleProcess | undefined;
  try {
    first = await startSampleProcess({ ...base, APP_ID: 'ctrl-c' });
    const health = await call<{ status: string; info: { locks: { status: string; appIdHeld: boolean } } }>(
      `${first.baseUrl}/health`,
    );
    expect(health.status).toBe(200);
    expect(health.body).toMatchObject({ status: 'ok', info: { locks: { status: 'up', appIdHeld: true } } });

    const repayment = call<LoanOperationEntity>(`${first.baseUrl}/loans/1/repayments`, { amountCents: 100 });
    const held = await eventually(async () => {
      const grants = (await call<LockGrant[]>(`${first!.baseUrl}/api/grants`)).body;
      return grants.find((grant) => grant.locks.some((lock) => lock.name === 'loan:1' && lock.mode === 'write'));
    }, 'the repayment to hold loan:1');

    first.interrupt();
    await first.printed('SIGINT: draining ctrl-c');
    const duringDrain = await fetch(`${first.baseUrl}/loans`).then((response) => response.status);
    const answered: JsonResponse<LoanOperationEntity> = await repayment;
    expect(answered.status).toBe(201);
    expect(answered.body).toMatchObject({ loanId: 1, kind: 'repayment', stamp: held.stamp, appId: 'ctrl-c' });
    const exit = await first.exited;
    expect({ exit, output: first.output() }).toMatchObject({ exit: { code: 0, signal: null } });
    expect(first.output()).not.toMatch(/ERROR|Error:|\n\s+at /);
    await afterExit();

    second = await startSampleProcess({ ...base, APP_ID: 'after-ctrl-c' });
    expect((await call<LockGrant[]>(`${second.baseUrl}/api/grants`)).body).toEqual([]);
    const log = (await call<LockLogEntry[]>(`${second.baseUrl}/api/log?limit=50`)).body;
    expect(log.find((entry) => entry.stamp === held.stamp)).toMatchObject({ appId: 'ctrl-c', status: 'RELEASED' });
    const next = await call<LoanOperationEntity>(`${second.baseUrl}/loans/1/repayments`, { amountCents: 100 });
    expect(next.status).toBe(201);
    second.interrupt();
    expect(await second.exited).toEqual({ code: 0, signal: null });
    return { stamp: held.stamp, duringDrain };
  } finally {
    killSampleProcess(first);
    killSampleProcess(second);
  }
}
