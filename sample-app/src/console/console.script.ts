/**
 * The console page's only script (plain browser JavaScript, no build step): renders the state embedded in the page,
 * then polls `GET /api/state` and re-renders (the scheduled jobs' and leader roles' panels included); posts the permits form to
 * `POST /api/permits`, the job buttons to `POST /ws1/rebuild` / `POST /ws2/rebuild`, a grant's force release (with its reason) to
 * `POST /api/grants/:stamp/release` and a scheduled job's pause, resume or "run now" (with an actor and a reason) to
 * `POST /api/jobs/:job/pause|resume|run`. It builds the DOM with `textContent`, never with HTML strings.
 */
export const CONSOLE_SCRIPT = String.raw`
(function () {
  'use strict';
  var state = JSON.parse(document.getElementById('initial-state').textContent);
  var byId = function (id) { return document.getElementById(id); };

  function seconds(ms) {
    if (ms === null || ms === undefined) return '\u2014';
    var s = ms / 1000;
    return (Math.abs(s) < 100 ? s.toFixed(1) : String(Math.round(s))) + ' s';
  }
  function clock(iso) {
    if (!iso) return '\u2014';
    var d = new Date(iso);
    return d.toLocaleTimeString('en-GB', { hour12: false }) + '.' + String(d.getMilliseconds()).padStart(3, '0');
  }
  function row(cells, attrs) {
    var tr = document.createElement('tr');
    Object.keys(attrs || {}).forEach(function (key) { tr.setAttribute(key, attrs[key]); });
    cells.forEach(function (cell) {
      var td = document.createElement('td');
      if (cell && cell.node) td.appendChild(cell.node);
      else if (cell && typeof cell === 'object') { td.textContent = cell.text; td.className = cell.cls; }
      else td.textContent = String(cell);
      tr.appendChild(td);
    });
    return tr;
  }
  function fill(id, rows, emptyText, columns) {
    if (rows.length === 0) {
      var td = document.createElement('td');
      td.colSpan = columns; td.className = 'empty'; td.textContent = emptyText;
      var tr = document.createElement('tr'); tr.appendChild(td); rows = [tr];
    }
    byId(id).replaceChildren.apply(byId(id), rows);
  }
  function modeCell(mode) { return { text: mode, cls: 'mode-' + mode }; }
  function locksText(locks) {
    return locks.map(function (l) { return l.name + ' ' + (l.mode === 'write' ? 'W' : 'R'); }).join(', ');
  }

  function renderGrants(grants) {
    var rows = [];
    grants.forEach(function (g) {
      g.locks.forEach(function (l, i) {
        var cells = [l.name, modeCell(l.mode), g.appId, g.stamp, seconds(g.heldForMs), seconds(g.leaseLeftMs),
          g.fencingToken, i === 0 ? { node: releaseButton(g.stamp) } : ''];
        rows.push(row(cells, { 'data-lock': l.name + ':' + l.mode, 'data-app': g.appId, 'data-stamp': String(g.stamp) }));
      });
    });
    fill('grants-body', rows, 'No lock is held right now.', 8);
    byId('grants-count').textContent = String(rows.length);
  }
  function releaseButton(stamp) {
    var button = document.createElement('button');
    button.type = 'button'; button.className = 'release'; button.textContent = 'Force release\u2026';
    button.setAttribute('data-release', String(stamp));
    return button;
  }
  function renderWaiters(waiters) {
    fill('waiters-body', waiters.map(function (w) {
      return row([w.position, w.appId, locksText(w.locks), seconds(w.waitingForMs),
        seconds(w.givesUpAt ? Date.parse(w.givesUpAt) - Date.now() : null), w.waiter],
        { 'data-app': w.appId });
    }), 'Nobody waits.', 6);
    byId('waiters-count').textContent = String(waiters.length);
  }
  function renderPermits(view) {
    var names = byId('lock-names');
    names.replaceChildren.apply(names, view.names.map(function (p) {
      var o = document.createElement('option'); o.value = p.name; return o;
    }));
    fill('permits-body', view.names.map(function (p) {
      var expected = { read: p.rows.read === null ? view.defaults.read : p.rows.read,
        write: p.rows.write === null ? view.defaults.write : p.rows.write };
      var stale = expected.read !== p.inForce.read || expected.write !== p.inForce.write;
      return row([p.name, p.inForce.read, p.inForce.write,
        p.rows.read === null ? 'default' : p.rows.read, p.rows.write === null ? 'default' : p.rows.write,
        stale ? { text: 'cache refresh pending', cls: 'pending' } : ''], { 'data-name': p.name });
    }), 'No lock names yet.', 6);
  }
  function runNode(r) {
    var span = document.createElement('span');
    span.className = 'run run-' + r.outcome;
    var skipped = [r.skippedBusy ? r.skippedBusy + ' busy' : '', r.skippedElsewhere ? r.skippedElsewhere + ' elsewhere' : '']
      .filter(Boolean).join(', ');
    span.textContent = clock(r.tick) + ' ' + r.outcome + (r.error ? ' ' + r.error : '') + (r.appId ? ' on ' + r.appId : '') +
      (skipped ? ' (skipped: ' + skipped + ')' : '') + (r.manual ? ' (run now by ' + r.actor + ': ' + r.reason + ')' : '');
    span.setAttribute('data-outcome', r.outcome);
    return span;
  }
  function renderJobs(jobs) {
    fill('jobs-body', jobs.map(function (j) {
      var runs = document.createElement('span');
      j.lastRuns.forEach(function (r) { runs.appendChild(runNode(r)); });
      return row([j.job, j.schedule, clock(j.nextTick),
        j.lastSucceededAgeSeconds === null ? { text: 'never', cls: 'outcome-failed' } : seconds(j.lastSucceededAgeSeconds * 1000) + ' ago',
        { node: runs }, j.paused ? { text: 'paused by ' + j.paused.actor + ': ' + j.paused.reason, cls: 'outcome-failed' } : '',
        { node: controlButtons(j) }], { 'data-job': j.job, 'data-paused': j.paused ? 'true' : 'false' });
    }), 'No scheduled job has run yet.', 7);
  }
  function controlButtons(j) {
    var span = document.createElement('span');
    [[j.paused ? 'resume' : 'pause', j.paused ? 'Resume\u2026' : 'Pause\u2026'], ['run', 'Run now\u2026']].forEach(function (b) {
      var button = document.createElement('button');
      button.type = 'button'; button.textContent = b[1];
      button.setAttribute('data-control', b[0]); button.setAttribute('data-control-job', j.job);
      span.appendChild(button);
    });
    return span;
  }
  function renderLeaders(leaders, appId) {
    fill('leaders-body', leaders.map(function (r) {
      var l = r.leader;
      var who = l ? { text: l.appId + (l.appId === appId ? ' (this instance)' : ''), cls: l.appId === appId ? 'leader-self' : '' }
        : { text: 'none', cls: 'leader-none' };
      return row([r.role, who, l ? l.instance : '\u2014', l ? clock(l.since) : '\u2014',
        l ? l.term : (r.term > 0 ? r.term + ' (ended)' : '\u2014'), l ? seconds(l.leaseLeftMs) : '\u2014',
        r.candidates.map(function (c) { return c.position + '. ' + c.appId; }).join(', ') || '\u2014'],
        { 'data-role': r.role, 'data-leader': l ? l.appId : '' });
    }), 'No leader role yet.', 7);
  }
  function renderLog(log) {
    fill('log-body', log.map(function (e) {
      return row([e.stamp, e.appId, locksText(e.locks), { text: e.status, cls: 'status-' + e.status },
        clock(e.acquiredAt), clock(e.businessDoneAt), clock(e.endedAt),
        e.endedBy ? e.endedBy + ': ' + (e.endReason || '') : ''], { 'data-stamp': String(e.stamp) });
    }), 'The lock log is empty.', 8);
  }
  function renderActivity(entries) {
    fill('activity-body', entries.map(function (a) {
      return row([clock(a.at), a.what, { text: a.outcome, cls: 'outcome-' + a.outcome }, a.detail]);
    }), 'Nothing yet.', 4);
  }
  function render(s) {
    renderGrants(s.grants);
    renderWaiters(s.waiters);
    renderPermits(s.permits);
    renderLog(s.log);
    renderJobs(s.jobs);
    renderLeaders(s.leaders, s.appId);
    renderActivity(s.activity);
    byId('stats').textContent =
      'granted ' + s.stats.granted + ', busy ' + s.stats.busy + ', released ' + s.stats.released;
    byId('updated').textContent = 'updated ' + clock(new Date().toISOString());
  }
  function setOnline(ok) { document.body.classList.toggle('offline', !ok); }

  function poll() {
    fetch('/api/state', { cache: 'no-store' })
      .then(function (res) { if (!res.ok) throw new Error('HTTP ' + res.status); return res.json(); })
      .then(function (s) { state = s; render(s); setOnline(true); })
      .catch(function () { setOnline(false); })
      .then(function () { setTimeout(poll, state.pollMs); });
  }

  function say(id, text, ok) { var el = byId(id); el.textContent = text; el.className = ok ? 'ok' : 'error'; }
  function post(url, body) {
    var init = { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body || {}) };
    return fetch(url, init)
      .then(function (res) { return res.json().then(function (json) { return { status: res.status, json: json }; }); });
  }
  function savePermits(permits) {
    var name = byId('permits-name').value.trim();
    var mode = byId('permits-mode').value;
    say('permits-status', 'saving\u2026', true);
    post('/api/permits', { name: name, mode: mode, permits: permits }).then(function (r) {
      if (r.status !== 200) { say('permits-status', 'refused: ' + r.json.message, false); return; }
      renderPermits(r.json);
      say('permits-status', 'saved: ' + name + ' ' + mode + ' = ' + (permits === null ? 'default' : permits), true);
    }, function (e) { say('permits-status', 'failed: ' + e.message, false); });
  }
  byId('permits-form').addEventListener('submit', function (event) {
    event.preventDefault();
    savePermits(Number(byId('permits-value').value));
  });
  // Force release: a grant's button opens the form (outside the table, which every poll redraws) for its reason.
  byId('grants-body').addEventListener('click', function (event) {
    var button = event.target.closest('button[data-release]');
    if (!button) return;
    byId('release-stamp').textContent = button.getAttribute('data-release');
    byId('release-form').hidden = false;
    byId('release-reason').focus();
  });
  byId('release-cancel').addEventListener('click', function () { byId('release-form').hidden = true; });
  byId('release-form').addEventListener('submit', function (event) {
    event.preventDefault();
    var stamp = byId('release-stamp').textContent;
    var reason = byId('release-reason').value.trim();
    // Checked here too, so that an incomplete form sends nothing; the server checks both again.
    if (!/^[1-9][0-9]*$/.test(stamp)) {
      say('release-status', 'choose a grant first: press "Force release\u2026" on its row', false); return;
    }
    if (!reason) {
      say('release-status', 'reason is required: say why the grant is freed', false); byId('release-reason').focus(); return;
    }
    post('/api/grants/' + encodeURIComponent(stamp) + '/release', { reason: reason }).then(function (r) {
      if (r.status !== 200) { say('release-status', 'refused: ' + r.json.message, false); return; }
      byId('release-form').hidden = true;
      byId('release-reason').value = '';
      say('release-status', 'released stamp ' + r.json.stamp + ' of ' + r.json.appId + ': ' + r.json.reason, true);
    }, function (e) { say('release-status', 'failed: ' + e.message, false); });
  });
  byId('permits-reset').addEventListener('click', function () { savePermits(null); });
  byId('permits-body').addEventListener('click', function (event) {
    var tr = event.target.closest('tr[data-name]');
    if (tr) byId('permits-name').value = tr.getAttribute('data-name');
  });
  // Job controls: a job's button opens the form (outside the table, which every poll redraws) for the actor and reason.
  byId('jobs-body').addEventListener('click', function (event) {
    var button = event.target.closest('button[data-control]');
    if (!button) return;
    byId('job-control-action').textContent = button.getAttribute('data-control');
    byId('job-control-job').textContent = button.getAttribute('data-control-job');
    byId('job-control-form').hidden = false;
    byId('job-control-actor').focus();
  });
  byId('job-control-cancel').addEventListener('click', function () { byId('job-control-form').hidden = true; });
  byId('job-control-form').addEventListener('submit', function (event) {
    event.preventDefault();
    var action = byId('job-control-action').textContent;
    var job = byId('job-control-job').textContent;
    var actor = byId('job-control-actor').value.trim();
    var reason = byId('job-control-reason').value.trim();
    // Checked here too, so that an incomplete form sends nothing; the server checks both again.
    if (!actor || !reason) { say('job-control-status', 'actor and reason are required: say who acts and why', false); return; }
    post('/api/jobs/' + encodeURIComponent(job) + '/' + action, { actor: actor, reason: reason }).then(function (r) {
      if (r.status !== 200) { say('job-control-status', 'refused: ' + r.json.message, false); return; }
      byId('job-control-form').hidden = true;
      byId('job-control-reason').value = '';
      say('job-control-status', job + ': ' + action + (r.json.changed ? '' : ' (nothing changed)') + ' by ' + r.json.actor + ': ' + r.json.reason, true);
    }, function (e) { say('job-control-status', 'failed: ' + e.message, false); });
  });
  document.querySelectorAll('button[data-job]').forEach(function (button) {
    button.addEventListener('click', function () {
      var job = button.getAttribute('data-job');
      say('job-status', job + ': running\u2026', true);
      post(button.getAttribute('data-url')).then(function (r) {
        if (r.status === 200) say('job-status', job + ': done ' + JSON.stringify(r.json), true);
        else say('job-status', job + ': HTTP ' + r.status + ' \u2014 ' + r.json.message, false);
      }, function (e) { say('job-status', job + ': failed: ' + e.message, false); });
    });
  });

  render(state);
  setTimeout(poll, state.pollMs);
})();
`;
