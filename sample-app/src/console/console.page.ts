import type { ConsoleState } from './console-state.service.js';
import { CONSOLE_SCRIPT } from './console.script.js';

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Escapes text for HTML content and attribute values. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c] ?? c);
}

/** JSON safe to embed in a `<script>` element (no `</script>` can end it early). */
function scriptJson(value: unknown): string {
  return JSON.stringify(value)
    .replace(/</g, '\\u003c')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');
}

const STYLE = `
  body { font: 14px/1.4 system-ui, sans-serif; margin: 0 auto; max-width: 1100px; padding: 0 16px 40px; color: #1d2430; }
  body.offline header::after { content: 'disconnected: retrying'; color: #b3261e; margin-left: 8px; }
  header { display: flex; align-items: baseline; gap: 16px; flex-wrap: wrap; border-bottom: 2px solid #1d2430; }
  h1 { font-size: 20px; margin: 16px 0 8px; } h2 { font-size: 16px; margin: 24px 0 6px; }
  .meta { color: #555; } .hint { color: #555; margin: 0 0 6px; }
  table { border-collapse: collapse; width: 100%; }
  th, td { text-align: left; padding: 4px 8px; border-bottom: 1px solid #dde1e7; white-space: nowrap; }
  th { background: #f1f3f6; font-weight: 600; }
  td.empty { color: #777; font-style: italic; }
  .mode-write { color: #b3261e; font-weight: 600; } .mode-read { color: #1b6e3c; font-weight: 600; }
  .status-ACQUIRED { color: #8a5a00; } .status-BUSINESS_DONE { color: #0b57d0; } .status-RELEASED { color: #1b6e3c; }
  .status-REAPED, .status-RECOVERED, .status-FORCED { color: #b3261e; font-weight: 600; }
  button.release { padding: 0 6px; }
  .outcome-refused, .outcome-skipped { color: #8a5a00; } .outcome-failed { color: #b3261e; }
  .run { margin-right: 10px; } .run-succeeded { color: #1b6e3c; } .run-skipped, .run-running { color: #8a5a00; }
  .run-failed, .run-lock-lost, .run-abandoned { color: #b3261e; font-weight: 600; }
  .pending { color: #8a5a00; font-style: italic; }
  .leader-self { font-weight: 600; } .leader-none { color: #b3261e; font-style: italic; }
  #permits-body tr { cursor: pointer; } #permits-body tr:hover { background: #f7f8fa; }
  form, .jobs { display: flex; gap: 8px; align-items: center; flex-wrap: wrap; margin-top: 8px; }
  [hidden] { display: none !important; } /* an element's own display (the forms' flex) must not show it */
  input, select, button { font: inherit; padding: 3px 6px; }
  .ok { color: #1b6e3c; } .error { color: #b3261e; }
  code { background: #f1f3f6; padding: 0 3px; }
`;

const SCHEDULE_HINT = `WS1 rebuilds under <code>WS1_WRITE</code> at :00/:15/:30/:45; WS2 under <code>WS2_WRITE</code> +
  <code>WS1_READ</code> at :02/:22/:37/:52 (at :02 WS1 is still rebuilding: refused whole); every instance tries, one
  wins, the others skip. Simulated readers of WS1 and loan customers keep the locks busy in between.`;

/**
 * The lock console: a plain HTML page with the current state embedded (so the first paint needs no round trip) and
 * a small script that keeps it live. Every value from the database reaches the DOM through `textContent`.
 */
export function renderConsolePage(state: ConsoleState): string {
  const appId = escapeHtml(state.appId);
  const { defaults, refreshIntervalMs } = state.permits;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Lock console · ${appId}</title>
<link rel="icon" href="data:,">
<style>${STYLE}</style>
</head>
<body>
<header>
  <h1>nestjs-db-locks · lock console</h1>
  <span class="meta">instance <b id="app-id">${appId}</b></span>
  <span class="meta" id="stats"></span>
  <span class="meta" id="updated"></span>
</header>

<section>
  <h2>Grants held now <span class="meta">(<span id="grants-count">0</span> locks, every instance)</span></h2>
  <table id="grants">
    <thead><tr><th>Lock</th><th>Mode</th><th>App</th><th>Stamp</th><th>Age</th><th>Lease left</th><th>Fencing token</th><th></th></tr></thead>
    <tbody id="grants-body"></tbody>
  </table>
  <form id="release-form" hidden>
    <span>Force release of stamp <b id="release-stamp"></b>: its holder loses it at its next renewal.</span>
    <label>Reason <input id="release-reason" size="40" maxlength="500" placeholder="why (recorded in the log)"></label>
    <button id="release-submit" type="submit">Release with this reason</button>
    <button id="release-cancel" type="button">Cancel</button>
  </form>
  <p id="release-status" role="status"></p>
</section>

<section>
  <h2>Waiters <span class="meta">(<span id="waiters-count">0</span>, every instance, in waiting order)</span></h2>
  <table id="waiters">
    <thead><tr><th>Position</th><th>App</th><th>Locks</th><th>Waiting for</th><th>Gives up in</th><th>Waiter</th></tr></thead>
    <tbody id="waiters-body"></tbody>
  </table>
</section>

<section>
  <h2>Permits in force</h2>
  <p class="hint">Without a row: read ${defaults.read}, write ${defaults.write}. Grants obey a new row at once; each
  instance's cache (columns “in force”) reloads every ${refreshIntervalMs / 1000} s. Click a row to edit it.</p>
  <table id="permits">
    <thead><tr><th>Lock</th><th>Read in force</th><th>Write in force</th><th>Read row</th><th>Write row</th><th></th></tr></thead>
    <tbody id="permits-body"></tbody>
  </table>
  <form id="permits-form">
    <label>Lock <input id="permits-name" list="lock-names" value="WS1" required size="12"></label>
    <datalist id="lock-names"></datalist>
    <label>Mode <select id="permits-mode"><option value="read">read</option><option value="write">write</option></select></label>
    <label>Permits <input id="permits-value" type="number" min="1" max="1000" value="1" required size="4"></label>
    <button id="permits-save" type="submit">Save permits</button>
    <button id="permits-reset" type="button">Use default</button>
    <span id="permits-status" role="status"></span>
  </form>
</section>

<section>
  <h2>Jobs</h2>
  <p class="hint">${state.schedule ? SCHEDULE_HINT : 'The scheduled jobs are off on this instance (SAMPLE_JOBS=off).'}
  Readers: <a href="/ws1/rates">/ws1/rates</a> (423 while WS1 rebuilds), <a href="/ws2/prices">/ws2/prices</a>,
  loans: <a href="/loans">/loans</a>.</p>
  <div class="jobs">
    <button type="button" data-job="ws1-rebuild" data-url="/ws1/rebuild">Run WS1 rebuild now</button>
    <button type="button" data-job="ws2-rebuild" data-url="/ws2/rebuild">Run WS2 rebuild now</button>
    <span id="job-status" role="status"></span>
  </div>
</section>

<section>
  <h2>Scheduled jobs <span class="meta">(every instance: each tick runs once across the fleet)</span></h2>
  <table id="scheduled-jobs">
    <thead><tr><th>Job</th><th>Schedule</th><th>Next tick</th><th>Last success</th><th>Last runs (newest first)</th><th>Paused</th><th>Controls (every instance)</th></tr></thead>
    <tbody id="jobs-body"></tbody>
  </table>
  <form id="job-control-form" hidden>
    <span><b id="job-control-action"></b> <b id="job-control-job"></b> on every instance.</span>
    <label>Actor <input id="job-control-actor" size="16" maxlength="200" placeholder="who (recorded)"></label>
    <label>Reason <input id="job-control-reason" size="40" maxlength="500" placeholder="why (recorded in the history)"></label>
    <button id="job-control-submit" type="submit">Send</button>
    <button id="job-control-cancel" type="button">Cancel</button>
  </form>
  <p id="job-control-status" role="status"></p>
</section>

<section>
  <h2>Leader roles <span class="meta">(every instance stands; one leads each role, the others wait in line)</span></h2>
  <p class="hint">The leader of <code>loan-book-report</code> audits the loan books every few seconds (its reports are
  in its activity). Stop it and the first candidate leads, in the next term.</p>
  <table id="leaders">
    <thead><tr><th>Role</th><th>Leader</th><th>Instance</th><th>Since</th><th>Term</th><th>Lease left</th><th>Candidates (in order)</th></tr></thead>
    <tbody id="leaders-body"></tbody>
  </table>
</section>

<section>
  <h2>Lock log <span class="meta">(newest first)</span></h2>
  <table id="log">
    <thead><tr><th>Stamp</th><th>App</th><th>Locks</th><th>Status</th><th>Acquired</th><th>Business done</th><th>Ended</th><th>Forced by: reason</th></tr></thead>
    <tbody id="log-body"></tbody>
  </table>
</section>

<section>
  <h2>This instance's activity</h2>
  <table id="activity">
    <thead><tr><th>At</th><th>What</th><th>Outcome</th><th>Detail</th></tr></thead>
    <tbody id="activity-body"></tbody>
  </table>
</section>

<script type="application/json" id="initial-state">${scriptJson(state)}</script>
<script>${CONSOLE_SCRIPT}</script>
</body>
</html>
`;
}
