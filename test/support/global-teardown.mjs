/** Stops the embedded server started by the global setup, if any. */
export default async function globalTeardown() {
  const state = /** @type {{ __ndlEmbedded?: { stop(): Promise<void> } }} */ (/** @type {unknown} */ (globalThis));
  await state.__ndlEmbedded?.stop();
}
