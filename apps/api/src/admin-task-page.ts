// The dashboard's page of one task: record, status timeline, progress, pending input requests, job attempts and
// worker, result or error, and the operators' cancel and retry. It re-reads the task every second (no reload);
// every value reaches the DOM through textContent, never as HTML.
import { pageHead } from './admin-page.ts';

/** A value for a script literal: JSON whose `<` cannot close the script element (the task id comes from the URL). */
function scriptValue(value: string): string {
  return JSON.stringify(value).replace(/</g, '\\u003c');
}

export function taskPage(paths: { api: string; home: string; taskId: string }): string {
  return `${pageHead('task')}
<style>
  body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5rem; color: #1d2330; max-width: 72rem; }
  h1 { font-size: 1.2rem; margin: 0 0 .3rem; }
  h2 { font-size: 1rem; margin: 1.4rem 0 .5rem; }
  .id { font-family: ui-monospace, monospace; font-size: .85rem; }
  .muted { color: #6b7280; font-size: .8rem; }
  .status { font-weight: 600; }
  .status[data-status=working] { color: #1f5fbf; }
  .status[data-status=input_required] { color: #a15c00; }
  .status[data-status=completed] { color: #17803d; }
  .status[data-status=failed] { color: #b42318; }
  .status[data-status=cancelled] { color: #6b7280; }
  table { border-collapse: collapse; }
  th, td { text-align: left; padding: .25rem .6rem; border-bottom: 1px solid #e6e9ef; vertical-align: top; }
  th { font-size: .8rem; color: #5a6272; font-weight: 500; }
  .bar { display: flex; height: 1.4rem; border-radius: 4px; overflow: hidden; margin: .4rem 0; background: #eef1f6; }
  .bar span { display: block; min-width: 3px; }
  .bar [data-status=working] { background: #7aa5e8; }
  .bar [data-status=input_required] { background: #f0b461; }
  .bar [data-status=completed] { background: #5cc48a; }
  .bar [data-status=failed] { background: #e2736a; }
  .bar [data-status=cancelled] { background: #b6bcc6; }
  pre { background: #f5f7fb; padding: .8rem; border-radius: 6px; font-size: .8rem; white-space: pre-wrap;
    max-height: 20rem; overflow: auto; }
  .actions button { margin-right: .5rem; padding: .35rem .9rem; }
  #message:empty, #error:empty { display: none; }
  #message { color: #17803d; } #error { color: #b42318; }
  progress { width: 24rem; }
</style>
</head>
<body>
<nav><a href="${paths.home}">&larr; all tasks</a> <span class="muted" id="refreshed"></span></nav>
<h1>Task <span class="id" id="task-id"></span></h1>
<div><span class="status" id="status"></span> <span id="status-message"></span></div>
<p class="actions"><button id="cancel" hidden>Cancel task</button><button id="retry" hidden>Retry as a new task</button>
  <span id="message"></span><span id="error"></span></p>

<h2>Record</h2>
<table id="record"></table>

<h2>Status timeline</h2>
<div class="bar" id="timeline-bar"></div>
<table id="timeline"><thead><tr><th>at</th><th>status</th><th>for</th><th>message</th></tr></thead><tbody></tbody></table>

<h2>Progress</h2>
<div id="progress"><span class="muted">none reported</span></div>

<h2>Pending input requests</h2>
<table id="inputs"><thead><tr><th>request</th><th>method</th><th>message</th></tr></thead><tbody></tbody></table>
<p class="muted" id="no-inputs">none</p>

<h2>Job</h2>
<table id="job"></table>
<p class="muted" id="no-job">No job in the queue: it finished (the record keeps the outcome) or was removed.</p>

<h2>Arguments</h2>
<pre id="arguments"></pre>

<h2 id="outcome-title">Result</h2>
<pre id="outcome">(not finished yet)</pre>
<script>
(() => {
  const API = ${scriptValue(paths.api)};
  const HOME = ${scriptValue(paths.home)};
  const TASK_ID = ${scriptValue(paths.taskId)};
  const TERMINAL = new Set(['completed', 'failed', 'cancelled']);
  const $ = (id) => document.getElementById(id);

  function duration(ms) {
    if (ms < 1000) return Math.max(0, Math.round(ms)) + ' ms';
    const s = ms / 1000;
    if (s < 60) return s.toFixed(1) + ' s';
    if (s < 3600) return Math.floor(s / 60) + 'm ' + Math.round(s % 60) + 's';
    return Math.floor(s / 3600) + 'h ' + Math.floor((s % 3600) / 60) + 'm';
  }
  function row(table, cells, header) {
    const tr = document.createElement('tr');
    cells.forEach((text, i) => {
      const td = document.createElement(header && i === 0 ? 'th' : 'td');
      td.textContent = text == null ? '' : String(text);
      tr.append(td);
    });
    table.append(tr);
    return tr;
  }
  function pairs(table, entries) {
    table.replaceChildren();
    for (const [name, value] of entries) if (value !== undefined) row(table, [name, value], true);
  }
  async function getJson(path) {
    const response = await fetch(path, { headers: { accept: 'application/json' } });
    if (response.status === 404) throw new Error('This task no longer exists (it expired or was purged).');
    if (!response.ok) throw new Error(path + ': HTTP ' + response.status);
    return response.json();
  }

  function render(d, pending) {
    const t = d.task;
    $('task-id').textContent = t.taskId;
    $('status').textContent = t.status;
    $('status').dataset.status = t.status;
    $('status-message').textContent = t.statusMessage || '';
    $('cancel').hidden = TERMINAL.has(t.status);
    $('retry').hidden = !(t.status === 'failed' && t.kind === 'task');
    pairs($('record'), [
      ['tool', t.tool], ['kind', t.kind === 'call' ? 'plain call' : 'task'], ['owner', t.owner],
      ['created', t.createdAt], ['last update', t.lastUpdatedAt], ['expires', t.expiresAt],
      ['ttl', duration(t.ttl)], ['poll interval', duration(t.pollInterval)],
      ['progress token', d.record.progressToken],
      ['external', d.record.external ? JSON.stringify(d.record.external) : undefined],
    ]);

    const history = d.history;
    const end = TERMINAL.has(t.status) ? Date.parse(t.lastUpdatedAt) : Date.now();
    const start = history.length ? history[0].at : Date.parse(t.createdAt);
    const body = $('timeline').tBodies[0];
    body.replaceChildren();
    const bar = $('timeline-bar');
    bar.replaceChildren();
    history.forEach((h, i) => {
      const next = i + 1 < history.length ? history[i + 1].at : end;
      const last = i + 1 === history.length && TERMINAL.has(h.status);
      const tr = row(body, [new Date(h.at).toISOString(), h.status, last ? '' : duration(next - h.at), h.statusMessage || '']);
      tr.dataset.status = h.status;
      tr.cells[1].className = 'status';
      tr.cells[1].dataset.status = h.status;
      if (!last) {
        const span = document.createElement('span');
        span.dataset.status = h.status;
        span.style.flexGrow = String(Math.max(1, next - h.at));
        span.title = h.status + ' ' + duration(next - h.at);
        bar.append(span);
      }
    });
    if (TERMINAL.has(t.status)) {
      const span = document.createElement('span');
      span.dataset.status = t.status;
      span.style.flexGrow = String(Math.max(1, (end - start) / 50));
      bar.append(span);
    }

    const p = d.job && d.job.progress;
    if (p && typeof p === 'object' && typeof p.progress === 'number') {
      const wrap = document.createElement('div');
      const meter = document.createElement('progress');
      if (typeof p.total === 'number') { meter.max = p.total; meter.value = p.progress; }
      const text = document.createElement('span');
      text.id = 'progress-text';
      text.textContent = ' ' + p.progress + (typeof p.total === 'number' ? ' / ' + p.total : '') + (p.message ? '  ' + p.message : '');
      wrap.append(meter, text);
      $('progress').replaceChildren(wrap);
    }

    const inputs = $('inputs').tBodies[0];
    inputs.replaceChildren();
    for (const request of pending) {
      const tr = row(inputs, [request.requestId, request.method, (request.params && request.params.message) || JSON.stringify(request.params)]);
      tr.dataset.requestId = request.requestId;
    }
    $('no-inputs').hidden = pending.length > 0;

    if (d.job) {
      const j = d.job;
      pairs($('job'), [
        ['state', j.state + ' (' + j.phase + ')'], ['attempts', j.attemptsStarted + ' started, ' + j.attemptsMade + ' made, at most ' + j.maxAttempts],
        ['worker', j.processedBy], ['stalled', j.stalledCounter ? String(j.stalledCounter) : undefined],
        ['queued at', new Date(j.addedAt).toISOString()],
        ['queue wait', j.processedOn ? duration(j.processedOn - j.addedAt) : undefined],
        ['last start', j.processedOn ? new Date(j.processedOn).toISOString() : undefined],
        ['failed reason', j.failedReason], ['inconsistency', d.inconsistency],
      ]);
    } else {
      $('job').replaceChildren();
    }
    $('no-job').hidden = Boolean(d.job);
    $('arguments').textContent = JSON.stringify(d.arguments, null, 2);
    const outcome = d.record.outcome;
    $('outcome-title').textContent = outcome && outcome.error ? 'Error' : 'Result';
    $('outcome').textContent = outcome ? JSON.stringify(outcome.error || outcome.result || outcome, null, 2) : '(not finished yet)';
    $('refreshed').textContent = ' refreshed ' + new Date().toLocaleTimeString();
  }

  async function refresh() {
    try {
      const [d, inputs] = await Promise.all([
        getJson(API + '/tasks/' + encodeURIComponent(TASK_ID)),
        getJson(API + '/tasks/' + encodeURIComponent(TASK_ID) + '/inputs'),
      ]);
      render(d, inputs.pending);
    } catch (error) {
      $('error').textContent = String(error.message || error);
    }
  }

  async function act(action) {
    $('message').textContent = '';
    $('error').textContent = '';
    try {
      const response = await fetch(API + '/tasks/' + encodeURIComponent(TASK_ID) + '/' + action, {
        method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json' }, body: '{}',
      });
      const body = await response.json();
      if (!response.ok) throw new Error(body.error || 'HTTP ' + response.status);
      if (action === 'retry') {
        const link = document.createElement('a');
        link.href = HOME + '/tasks/' + encodeURIComponent(body.task.taskId);
        link.id = 'retried';
        link.textContent = body.task.taskId;
        $('message').replaceChildren(document.createTextNode('Retried as task '), link);
      } else {
        $('message').textContent = 'Cancelled.';
      }
      await refresh();
    } catch (error) {
      $('error').textContent = String(error.message || error);
    }
  }

  $('cancel').addEventListener('click', () => void act('cancel'));
  $('retry').addEventListener('click', () => void act('retry'));
  void refresh();
  setInterval(() => void refresh(), 1000);
})();
</script>
</body>
</html>
`;
}
