// The dashboard's main page: it reads /admin/api/* every second and renders tasks in MCP terms; a click opens the
// task's page (admin-task-page.ts); the "Last hour" charts are drawn by admin-charts-script.ts with uPlot. No build
// step; every value reaches the DOM through textContent, never as HTML.

export interface DashboardPaths {
  api: string;
  queues: string;
  /** The task pages: `<tasks>/<taskId>`. */
  tasks: string;
  charts: { uplotScript: string; uplotStyle: string; script: string };
}

/** The start of every dashboard page, up to and including its title; the page's own head follows. */
export function pageHead(title: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>mcp-task-runner: ${title}</title>`;
}

export function dashboardPage(paths: DashboardPaths): string {
  return `${pageHead('tasks')}
<link rel="stylesheet" href="${paths.charts.uplotStyle}">
<style>
  #charts .chart-row, #charts .breakdown-row { display: flex; flex-wrap: wrap; gap: 1rem; }
  #charts figure { margin: 0; }
  #charts figcaption, #charts h3 { font-size: .85rem; color: #5a6272; margin: .2rem 0 .3rem; font-weight: 600; }
  #charts .breakdown { flex: 1 1 24rem; }
  #charts .hbar { display: inline-block; height: .6rem; background: #c9d6ee; margin-right: .4rem; border-radius: 2px; }
  #charts .uplot { font-size: 12px; }
  h2 { font-size: 1.05rem; margin: 1.2rem 0 .4rem; }
  body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5rem; color: #1d2330; }
  h1 { font-size: 1.3rem; margin: 0 0 .8rem; }
  nav a { margin-right: 1rem; }
  .cards { display: flex; flex-wrap: wrap; gap: .6rem; margin: 1rem 0; }
  .card { border: 1px solid #d5dae3; border-radius: 6px; padding: .4rem .8rem; min-width: 7rem; }
  .card b { display: block; font-size: 1.2rem; }
  form { margin: .8rem 0; display: flex; gap: .5rem; flex-wrap: wrap; align-items: end; }
  label { display: flex; flex-direction: column; font-size: .8rem; color: #5a6272; }
  table { border-collapse: collapse; width: 100%; }
  th, td { text-align: left; padding: .3rem .5rem; border-bottom: 1px solid #e6e9ef; vertical-align: top; }
  th { font-size: .8rem; color: #5a6272; }
  td.id { font-family: ui-monospace, monospace; font-size: .8rem; white-space: nowrap; }
  tr[data-task-id] { cursor: pointer; }
  tr[data-task-id]:hover { background: #f5f7fb; }
  .status { font-weight: 600; }
  .status[data-status=working] { color: #1f5fbf; }
  .status[data-status=input_required] { color: #a15c00; }
  .status[data-status=completed] { color: #17803d; }
  .status[data-status=failed] { color: #b42318; }
  .status[data-status=cancelled] { color: #6b7280; }
  .muted { color: #6b7280; font-size: .8rem; }
  .error { color: #b42318; }
</style>
</head>
<body>
<h1>mcp-task-runner: tasks</h1>
<nav><a href="${paths.queues}">BullMQ queue (bull-board)</a><span class="muted" id="refreshed"></span></nav>
<div class="cards" id="overview"></div>
<section id="charts"><h2>Last hour</h2><div class="chart-row"></div><div class="breakdown-row"></div>
  <p class="error chart-error"></p></section>
<h2>Tools</h2>
<table id="scheduling">
  <thead><tr><th>tool</th><th>running/limit</th><th>queued</th><th>queued per principal</th><th>rate limit</th>
    <th>retries</th><th>timeouts</th><th>held by caps</th></tr></thead>
  <tbody id="tools"></tbody>
</table>
<h2>Tasks</h2>
<form id="filters">
  <label>status <select name="status"><option value="">any</option>
    <option>working</option><option>input_required</option><option>completed</option><option>failed</option>
    <option>cancelled</option></select></label>
  <label>tool <input name="tool" size="14"></label>
  <label>owner / principal <input name="owner" size="30"></label>
  <label>kind <select name="kind"><option value="">any</option><option value="task">task</option>
    <option value="call">plain call</option></select></label>
  <button type="submit">Apply</button>
</form>
<table>
  <thead><tr><th>task</th><th>status</th><th>tool</th><th>owner</th><th>created</th><th>last update</th>
    <th>duration</th><th>status message</th></tr></thead>
  <tbody id="tasks"></tbody>
</table>
<p><button id="more" hidden>Next page</button> <span id="error" class="error"></span></p>
<script src="${paths.charts.uplotScript}"></script>
<script src="${paths.charts.script}"></script>
<script>
(() => {
  const API = ${JSON.stringify(paths.api)};
  const TASK_PAGES = ${JSON.stringify(paths.tasks)};
  const TERMINAL = new Set(['completed', 'failed', 'cancelled']);
  const $ = (id) => document.getElementById(id);
  let cursor = '';

  function query() {
    const form = new FormData($('filters'));
    const params = new URLSearchParams();
    for (const [name, value] of form) if (value) params.set(name, String(value));
    if (cursor) params.set('cursor', cursor);
    return params.toString();
  }

  function age(ms) {
    const s = Math.max(0, Math.round(ms / 1000));
    if (s < 60) return s + 's';
    if (s < 3600) return Math.floor(s / 60) + 'm ' + (s % 60) + 's';
    if (s < 86400) return Math.floor(s / 3600) + 'h ' + Math.floor((s % 3600) / 60) + 'm';
    return Math.floor(s / 86400) + 'd ' + Math.floor((s % 86400) / 3600) + 'h';
  }

  function cell(row, text, className) {
    const td = row.insertCell();
    td.textContent = text;
    if (className) td.className = className;
    return td;
  }

  function render(tasks) {
    const now = Date.now();
    const body = $('tasks');
    const rows = tasks.map((task) => {
      const row = document.createElement('tr');
      row.dataset.taskId = task.taskId;
      const created = Date.parse(task.createdAt);
      const updated = Date.parse(task.lastUpdatedAt);
      cell(row, task.taskId, 'id');
      const status = cell(row, task.status, 'status');
      status.dataset.status = task.status;
      cell(row, task.tool + (task.kind === 'call' ? ' (plain call)' : ''));
      cell(row, task.owner);
      cell(row, age(now - created) + ' ago').title = task.createdAt;
      cell(row, age(now - updated) + ' ago').title = task.lastUpdatedAt;
      cell(row, TERMINAL.has(task.status) ? age(updated - created) : age(now - created) + ' so far');
      cell(row, task.statusMessage || '');
      row.addEventListener('click', () => { window.location.href = TASK_PAGES + '/' + encodeURIComponent(task.taskId); });
      return row;
    });
    body.replaceChildren(...rows);
  }

  function renderOverview(o) {
    const cards = [['tasks', o.tasks.total]];
    for (const [status, count] of Object.entries(o.tasks.byStatus)) cards.push([status, count]);
    cards.push(['jobs waiting', (o.jobs.waiting || 0) + (o.jobs.prioritized || 0)]);
    cards.push(['jobs active', o.jobs.active || 0], ['jobs delayed', o.jobs.delayed || 0]);
    cards.push(['workers', o.workers.length]);
    if (o.oldestWaiting) cards.push(['oldest waiting', age(o.oldestWaiting.waitingMs)]);
    renderScheduling(o.tools || []);
    $('overview').replaceChildren(...cards.map(([name, value]) => {
      const card = document.createElement('div');
      card.className = 'card';
      card.dataset.name = name;
      const b = document.createElement('b');
      b.textContent = String(value);
      card.append(b, document.createTextNode(name));
      return card;
    }));
  }

  function renderScheduling(tools) {
    $('tools').replaceChildren(...tools.map((t) => {
      const row = document.createElement('tr');
      row.dataset.tool = t.tool;
      const rate = t.scheduling.rateLimit;
      cell(row, t.tool);
      cell(row, t.running + '/' + (t.limit === undefined ? '-' : t.limit));
      cell(row, String(t.queued));
      cell(row, Object.entries(t.queuedByPrincipal).map(([p, n]) => p + ': ' + n).join(', ') || '-');
      cell(row, rate ? rate.max + ' per ' + age(rate.perMs) + (t.rateLimitedForMs > 0 ? ', waiting ' + age(t.rateLimitedForMs) : '') : '-');
      cell(row, String(t.counters.retries));
      cell(row, String(t.counters.timeouts));
      cell(row, String(t.counters.parked));
      return row;
    }));
  }

  async function getJson(path) {
    const response = await fetch(path, { headers: { accept: 'application/json' } });
    if (!response.ok) throw new Error(path + ': HTTP ' + response.status);
    return response.json();
  }

  async function refreshTasks() {
    try {
      const page = await getJson(API + '/tasks?' + query());
      render(page.tasks);
      $('more').hidden = !page.nextCursor;
      $('more').dataset.cursor = page.nextCursor || '';
      $('error').textContent = '';
      $('refreshed').textContent = ' refreshed ' + new Date().toLocaleTimeString();
    } catch (error) {
      $('error').textContent = String(error);
    }
  }

  async function refreshOverview() {
    try { renderOverview(await getJson(API + '/overview')); } catch (error) { $('error').textContent = String(error); }
  }

  $('filters').addEventListener('submit', (event) => { event.preventDefault(); cursor = ''; void refreshTasks(); });
  $('more').addEventListener('click', () => { cursor = $('more').dataset.cursor || ''; void refreshTasks(); });
  void refreshTasks();
  void refreshOverview();
  setInterval(() => void refreshTasks(), 1000);
  setInterval(() => void refreshOverview(), 5000);
})();
</script>
</body>
</html>
`;
}
