// Answers, for each process key given as an argument, whether the built library proves that process gone: one JSON
// line `[true|false, ...]` on stdout. Run by test/faults/hidepid.spec.ts as another user under `hidepid=2`.
// Loaded by its address at run time: an internal module of the build (dist/), which the typecheck runs before.
/** @type {{ isProcessGone(key: string): boolean }} */
const { isProcessGone } = await import(new URL('../../dist/utils/process-identity.util.js', import.meta.url).href);

process.stdout.write(`${JSON.stringify(process.argv.slice(2).map((key) => isProcessGone(key)))}\n`);
