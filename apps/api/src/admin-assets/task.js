// The page of one task (task.html, served at /admin/tasks/<taskId>): record, status timeline, progress, pending input
// requests, attempts (worker, start, how each ended), job, checkpoint, steps and child tasks, what it waits for,
// result or error, and the operators' cancel, retry and resume.
// It re-reads the task every second (no reload). The task id comes from the page's own address, never from markup the
// server wrote; every value reaches the DOM through textContent, never as HTML. A module, so its names stay its own.
const TASK_ID = taskIdOfPage();
const TASK_API = '../api/tasks/' + encodeURIComponent(TASK_ID);
const TERMINAL = new Set(['completed', 'failed', 'cancelled']);
const $ = (id) => document.getElementById(id);

/** The last segment of /admin/tasks/<taskId>, as the server decoded it for its route. */
function taskIdOfPage() {
  const path = window.location.pathname;
  const segment = path.slice(path.lastIndexOf('/') + 1);
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

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

function renderRecord(d) {
  const t = d.task;
  $('task-id').textContent = t.taskId;
  $('status').textContent = t.status;
  $('status').dataset.status = t.status;
  $('status-message').textContent = t.statusMessage || '';
  $('cancel').hidden = TERMINAL.has(t.status);
  $('retry').hidden = !(t.status === 'failed' && t.kind === 'task');
  // A failed task is resumed once (docs/durable-execution.md, "Resuming a failed task").
  $('resume').hidden = $('retry').hidden || Boolean(d.durable && d.durable.resumedBy);
  pairs($('record'), [
    ['tool', t.tool],
    ['kind', t.kind === 'call' ? 'plain call' : 'task'],
    ['owner', t.owner],
    ['created', t.createdAt],
    ['last update', t.lastUpdatedAt],
    ['expires', t.expiresAt],
    ['ttl', duration(t.ttl)],
    ['poll interval', duration(t.pollInterval)],
    ['progress token', d.record.progressToken],
    ['external', d.record.external ? JSON.stringify(d.record.external) : undefined],
  ]);
}

function renderTimeline(t, history) {
  const end = TERMINAL.has(t.status) ? Date.parse(t.lastUpdatedAt) : Date.now();
  const start = history.length ? history[0].at : Date.parse(t.createdAt);
  const body = $('timeline').tBodies[0];
  body.replaceChildren();
  const bar = $('timeline-bar');
  bar.replaceChildren();
  history.forEach((h, i) => {
    const next = i + 1 < history.length ? history[i + 1].at : end;
    const last = i + 1 === history.length && TERMINAL.has(h.status);
    const cells = [new Date(h.at).toISOString(), h.status, last ? '' : duration(next - h.at), h.statusMessage || ''];
    const tr = row(body, cells);
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
}

function renderProgress(p) {
  if (!(p && typeof p === 'object' && typeof p.progress === 'number')) return;
  const wrap = document.createElement('div');
  const meter = document.createElement('progress');
  if (typeof p.total === 'number') {
    meter.max = p.total;
    meter.value = p.progress;
  }
  const text = document.createElement('span');
  text.id = 'progress-text';
  const total = typeof p.total === 'number' ? ' / ' + p.total : '';
  text.textContent = ' ' + p.progress + total + (p.message ? '  ' + p.message : '');
  wrap.append(meter, text);
  $('progress').replaceChildren(wrap);
}

function renderInputs(pending) {
  const inputs = $('inputs').tBodies[0];
  inputs.replaceChildren();
  for (const request of pending) {
    const message = (request.params && request.params.message) || JSON.stringify(request.params);
    const tr = row(inputs, [request.requestId, request.method, message]);
    tr.dataset.requestId = request.requestId;
  }
  $('no-inputs').hidden = pending.length > 0;
}

function renderJob(j, inconsistency) {
  if (j) {
    pairs($('job'), [
      ['state', j.state + ' (' + j.phase + ')'],
      ['attempts', j.attemptsStarted + ' started, ' + j.attemptsMade + ' made, at most ' + j.maxAttempts],
      ['worker', j.processedBy],
      ['stalled', j.stalledCounter ? String(j.stalledCounter) : undefined],
      ['queued at', new Date(j.addedAt).toISOString()],
      ['queue wait', j.processedOn ? duration(j.processedOn - j.addedAt) : undefined],
      ['last start', j.processedOn ? new Date(j.processedOn).toISOString() : undefined],
      ['failed reason', j.failedReason],
      ['inconsistency', inconsistency],
    ]);
  } else {
    $('job').replaceChildren();
  }
  $('no-job').hidden = Boolean(j);
}

/** The attempts of the task's job: who ran each, from when, for how long, how it ended (lost, handed back, ...). */
function renderAttempts(attempts) {
  const body = $('attempts').tBodies[0];
  body.replaceChildren();
  for (const a of attempts || []) {
    const ended = a.endedAt === undefined ? Date.now() : a.endedAt;
    const tr = row(body, [a.attempt, a.worker, new Date(a.startedAt).toISOString(), duration(ended - a.startedAt)]);
    const cell = document.createElement('td');
    cell.textContent = a.ending || 'running';
    cell.dataset.ending = a.ending || 'running';
    tr.append(cell);
  }
  $('no-attempts').hidden = Boolean(attempts && attempts.length);
}

/** A link to the page of another task: a sibling of this page, /admin/tasks/<id>. */
function taskLink(taskId) {
  const link = document.createElement('a');
  link.href = './' + encodeURIComponent(taskId);
  link.textContent = taskId;
  return link;
}

/** What the tool keeps durably (docs/durable-execution.md): its checkpoint, stored steps, parent and children. */
function renderDurable(durable) {
  const table = $('durable');
  table.replaceChildren();
  const body = $('children').tBodies[0];
  body.replaceChildren();
  $('children').hidden = !(durable && durable.children.length);
  $('no-durable').hidden = Boolean(durable);
  if (!durable) return;
  if (durable.parent) row(table, ['parent task', ''], true).cells[1].append(taskLink(durable.parent));
  if (durable.resumedFrom) {
    row(table, ['resumed from', ''], true).cells[1].append(taskLink(durable.resumedFrom));
  }
  if (durable.resumedBy) row(table, ['resumed by', ''], true).cells[1].append(taskLink(durable.resumedBy));
  if (durable.checkpoint) {
    const at = durable.checkpoint.at;
    const ago = duration(Date.now() - Date.parse(at));
    row(table, ['checkpoint', at + ' (' + ago + ' ago), ' + durable.checkpoint.bytes + ' bytes'], true).id =
      'checkpoint';
  }
  if (durable.steps) row(table, ['steps stored', durable.steps], true);
  for (const child of durable.children) {
    const tr = row(body, ['', child.tool, child.status]);
    tr.cells[0].append(taskLink(child.taskId));
    tr.cells[2].className = 'status';
    tr.cells[2].dataset.status = child.status;
  }
}

/** Each step and child call in the order they started: when, how long, stored by which attempt, how large. */
function renderSteps(steps, leftOut) {
  const body = $('steps').tBodies[0];
  body.replaceChildren();
  $('steps').hidden = !(steps && steps.length);
  $('steps-left-out').hidden = !leftOut;
  $('steps-left-out').textContent = leftOut ? leftOut + ' more not shown' : '';
  (steps || []).forEach((step, i) => {
    const tr = row(body, [
      i + 1,
      step.kind === 'call' ? 'call ' + (step.tool || '?') : 'step',
      step.name,
      step.startedAt,
      step.durationMs === undefined ? '' : duration(step.durationMs),
      step.attempt + (step.resumedFrom ? ' of ' : ''),
      step.bytes === undefined ? '' : step.bytes,
      '',
    ]);
    tr.dataset.kind = step.kind;
    if (step.resumedFrom) tr.cells[5].append(taskLink(step.resumedFrom));
    if (step.taskId) {
      const status = document.createElement('span');
      status.className = 'status';
      status.dataset.status = step.status;
      status.textContent = step.status;
      tr.cells[7].append(taskLink(step.taskId), ' ', status);
    }
  });
}

/** The task's webhook (docs/webhooks.md): where, which changes, what is left to deliver, and every attempt. */
function renderWebhook(webhook) {
  const body = $('webhook-attempts').tBodies[0];
  body.replaceChildren();
  $('webhook-attempts').hidden = !(webhook && webhook.attempts.length);
  $('no-webhook').hidden = Boolean(webhook);
  if (!webhook) {
    $('webhook').replaceChildren();
    return;
  }
  const left = webhook.pending.map((p) => p.status + ' (' + p.attempts + ' attempts)').join(', ');
  pairs($('webhook'), [
    ['url', webhook.url + ' (' + webhook.events + ' changes)'],
    ['deliveries left', left || 'none'],
    ['next attempt', webhook.nextAt === undefined ? undefined : new Date(webhook.nextAt).toISOString()],
    ['not delivered', webhook.dropped ? webhook.dropped + ' changes (WEBHOOK_MAX_PENDING)' : undefined],
  ]);
  for (const attempt of webhook.attempts) {
    const answer = attempt.error || (attempt.code === undefined ? '' : 'HTTP ' + attempt.code);
    const at = new Date(attempt.at).toISOString();
    const cells = [
      at,
      attempt.id,
      attempt.status,
      attempt.attempt,
      attempt.outcome,
      answer,
      attempt.ms,
      attempt.worker,
    ];
    const tr = row(body, cells);
    tr.cells[4].className = 'status';
    tr.cells[4].dataset.status = attempt.outcome === 'delivered' ? 'completed' : 'failed';
  }
}

/** What the task waits for while parked, its waits, the events kept for it (docs/durable-execution.md, "Waits"). */
function renderWaits(waits) {
  const table = $('waits');
  table.replaceChildren();
  $('no-waits').hidden = Boolean(waits);
  if (!waits) return;
  const waiting = waits.waiting;
  if (waiting) {
    const what = waiting.kind === 'sleep' ? 'sleep' : waiting.kind + ' ' + (waiting.name || '');
    const left = Date.parse(waiting.until) - Date.now();
    const when = left >= 0 ? 'in ' + duration(left) : duration(-left) + ' ago';
    row(table, ['parked on', what + ' until ' + waiting.until + ' (' + when + ')'], true).id = 'parked-on';
  }
  row(table, ['waits made', waits.waits], true);
  row(table, ['events kept', waits.eventsKept], true);
}

function render(d, pending) {
  renderRecord(d);
  renderTimeline(d.task, d.history);
  renderProgress(d.job && d.job.progress);
  renderInputs(pending);
  renderAttempts(d.attempts);
  renderJob(d.job, d.inconsistency);
  renderDurable(d.durable);
  renderSteps(d.steps, d.stepsLeftOut);
  renderWebhook(d.webhook);
  renderWaits(d.waits);
  $('arguments').textContent = JSON.stringify(d.arguments, null, 2);
  const outcome = d.record.outcome;
  $('outcome-title').textContent = outcome && outcome.error ? 'Error' : 'Result';
  $('outcome').textContent = outcome
    ? JSON.stringify(outcome.error || outcome.result || outcome, null, 2)
    : '(not finished yet)';
  $('refreshed').textContent = ' refreshed ' + new Date().toLocaleTimeString();
}

async function refresh() {
  try {
    const [d, inputs] = await Promise.all([getJson(TASK_API), getJson(TASK_API + '/inputs')]);
    render(d, inputs.pending);
  } catch (error) {
    $('error').textContent = String(error.message || error);
  }
}

async function act(action) {
  $('message').textContent = '';
  $('error').textContent = '';
  try {
    const response = await fetch(TASK_API + '/' + action, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: '{}',
    });
    const body = await response.json();
    if (!response.ok) throw new Error(body.error || 'HTTP ' + response.status);
    if (action !== 'cancel') {
      const link = document.createElement('a');
      // A sibling of this page: /admin/tasks/<new id>.
      link.href = './' + encodeURIComponent(body.task.taskId);
      link.id = 'retried';
      link.textContent = body.task.taskId;
      const said = action === 'resume' ? 'Resumed as task ' : 'Retried as task ';
      $('message').replaceChildren(document.createTextNode(said), link);
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
$('resume').addEventListener('click', () => void act('resume'));
void refresh();
setInterval(() => void refresh(), 1000);
