// Answers, for each process key given as an argument, whether the built library proves that process gone: one JSON
// line `[true|false, ...]` on stdout. Run by test/faults/hidepid.spec.ts as another user under `hidepid=2`.
import { isProcessGone } from '../../dist/utils/process-identity.util.js';

process.stdout.write(`${JSON.stringify(process.argv.slice(2).map((key) => isProcessGone(key)))}\n`);
