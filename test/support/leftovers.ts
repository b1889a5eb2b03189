/** Something a test starts that runs until it is stopped: a load, a sampler. */
export interface Stoppable {
  stop(): Promise<unknown>;
}

const running = new Set<Stoppable>();

/**
 * Registers `run` until its `stop()` is called, so that a test that fails before it stops what it started does not
 * leave it running into the next test, or past the end of the file (where it would open connections after Jest tore
 * the environment down).
 */
export function stoppedAfterEach<T extends Stoppable>(run: T): T {
  const stop = run.stop.bind(run);
  running.add(run);
  run.stop = () => {
    running.delete(run);
    return stop();
  };
  return run;
}

/** Stops whatever a test left running (use it in `afterEach`). */
export async function stopLeftovers(): Promise<void> {
  await Promise.allSettled([...running].map((run) => run.stop()));
}
