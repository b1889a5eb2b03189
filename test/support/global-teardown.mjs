import { rmSync } from 'node:fs';

/** Stops the servers started by the global setup, if any, and removes their temporary folder. */
export default async function globalTeardown() {
  const state =
    /** @type {{ __ndlEmbedded?: { stop(): Promise<void> }, __ndlMariadb?: { stop(): Promise<void> }, __ndlPgBouncer?: { stop(): Promise<void> }, __ndlTempDir?: string }} */ (
      /** @type {unknown} */ (globalThis)
    );
  await state.__ndlPgBouncer?.stop();
  await Promise.all([state.__ndlEmbedded?.stop(), state.__ndlMariadb?.stop()]);
  if (state.__ndlTempDir) rmSync(state.__ndlTempDir, { recursive: true, force: true });
}
