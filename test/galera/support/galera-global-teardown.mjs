import { rmSync } from 'node:fs';

/** Stops the Galera cluster of the global setup, if it started one, and removes its folder. */
export default async function galeraGlobalTeardown() {
  const state =
    /** @type {{ __ndlGalera?: { stop(): Promise<void> }, __ndlGaleraControl?: import('node:http').Server, __ndlGaleraDir?: string }} */ (
      /** @type {unknown} */ (globalThis)
    );
  state.__ndlGaleraControl?.close();
  state.__ndlGaleraControl?.closeAllConnections();
  await state.__ndlGalera?.stop();
  if (state.__ndlGaleraDir) rmSync(state.__ndlGaleraDir, { recursive: true, force: true });
}
