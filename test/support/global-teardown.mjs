/** Stops the embedded server started by the global setup, if any. */
export default async function globalTeardown() {
  await globalThis.__ndlEmbedded?.stop();
}
