import { DIALECTS } from '../support/dialects.js';
import { runSoak, SOAK_FAULTS, type SoakRun } from '../support/fault-soak.js';
import type { RestartableServer } from '../support/restartable-server.js';
import { judgedFromTheHoldersSide } from '../support/soak-verdicts.js';

/** The fault schedule's seed: SOAK_SEED replays a run (the workers' own choices still differ). */
const SEED = Number(process.env.SOAK_SEED ?? Math.floor(Math.random() * 2 ** 31));
/** Faults are made for this long on each dialect (SOAK_BUDGET_MS to soak longer by hand). */
const BUDGET_MS = Number(process.env.SOAK_BUDGET_MS ?? 90_000);
const LEASE_MS = 2000;

/**
 * A randomized fault soak, judged from the holders' side (docs/faults.md, "The fault soak"): five worker processes
 * contend for two names with short leases, making fenced writes to a counter, while kill -9 and respawn, pauses past
 * the lease, fast and immediate restarts, network freezes and terminated sessions strike one after the other.
 */
for (const dialect of DIALECTS) dialect.describeRestartable(`the fault soak (${dialect.name})`, () => {
  let server: RestartableServer;
  let run: SoakRun;

  beforeAll(async () => {
    process.stdout.write(`fault soak (${dialect.name}): seed ${SEED} (SOAK_SEED=${SEED} replays its faults)\n`);
    server = await dialect.startRestartable();
    run = await runSoak(server, { seed: SEED, budgetMs: BUDGET_MS, workers: 5, names: ['S1', 'S2'], leaseMs: LEASE_MS, renewMs: 300, reaperMs: 500 });
    const { figures } = run.verdict;
    process.stdout.write(
      `fault soak (${dialect.name}), seed ${SEED}, ${BUDGET_MS / 1000} s of faults: ${figures.grants} grants, ` +
        `${figures.fencedCommits} fenced commits (${figures.fencedUnknown} with no answer, ${figures.fencedUnknownLanded} of them landed), ` +
        `${figures.signals} signals; faults ${Object.entries(run.faults).map(([kind, n]) => `${kind} ${n}`).join(', ')}; ` +
        `${figures.acquireErrors} failed acquisitions (${figures.waitsEndedByStoreErrorBeforeDeadline} waits ended by a store error ` +
        `before their deadline), ${figures.releaseErrors} failed releases, ${figures.releasesUndoneByCrash} releases undone by a crash, ` +
        `${figures.startFailures} failed start-ups, ${figures.unexpectedExits} unexpected exits; close ` +
        `${Math.min(...run.closeMs).toFixed(0)}–${Math.max(...run.closeMs).toFixed(0)} ms (hung: ${run.hung.join(', ') || 'none'}); ` +
        `left after shutdown: ${figures.leftLocks} lock rows, ${figures.leftWaiters} waiter rows\n`,
    );
  }, BUDGET_MS + 120_000);
  afterAll(async () => {
    await server?.destroy();
  });

  it('covered something: grants, fenced commits, and every kind of fault', () => {
    expect(run.verdict.figures.grants).toBeGreaterThan(100);
    expect(run.verdict.figures.fencedCommits).toBeGreaterThan(50);
    for (const kind of SOAK_FAULTS) expect([kind, run.faults[kind]]).toEqual([kind, expect.any(Number)]);
    expect(Math.min(...Object.values(run.faults))).toBeGreaterThan(0);
    expect(Object.values(run.faults).reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(BUDGET_MS / 6000);
  });

  judgedFromTheHoldersSide(() => run);

  it('leaves no lock and no waiter rows of its app ids after shutdown', () => {
    expect({ locks: run.verdict.figures.leftLocks, waiters: run.verdict.figures.leftWaiters }).toEqual({ locks: 0, waiters: 0 });
  });
});
