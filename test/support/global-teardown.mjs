import { rmSync } from 'node:fs';

/** Stops the embedded server started by the global setup, if any, and removes its temporary folder. */
export default async function globalTeardown() {
  const state = /** @type {{ __ndlEmbedded?: { stop(): Promise<void> }, __ndlTempDir?: string }} */ (
    /** @type {unknown} */ (globalThis)
  );
  await state.__ndlEmbedded?.stop();
  if (state.__ndlTempDir) rmSync(state.__ndlTempDir, { recursive: true, force: true });
}
