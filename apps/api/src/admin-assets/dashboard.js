// The dashboard's main page (dashboard.html, served at /admin/): reads the JSON under api/ every second and renders
// tasks in MCP terms; a click opens the task's page (task.html). Every URL is relative to the page, and every value
// reaches the DOM through textContent, never as HTML. A module, so its names stay its own.
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
    row.addEventListener('click', () => {
      window.location.href = 'tasks/' + encodeURIComponent(task.taskId);
    });
    return row;
  });
  body.replaceChildren(...rows);
}

function renderOverview(o) {
  const cards = [['tasks', o.tasks.total]];
  for (const [status, count] of Object.entries(o.tasks.byStatus)) cards.push([status, count]);
  // The queue depth as TaskAdmin.queueJobs counts it: waiting includes BullMQ's prioritized set.
  cards.push(['jobs waiting', o.jobs.waiting], ['jobs active', o.jobs.active], ['jobs delayed', o.jobs.delayed]);
  cards.push(['jobs held by caps', o.jobs.held]);
  cards.push(['workers', o.workers.length]);
  if (o.oldestWaiting) cards.push(['oldest waiting', age(o.oldestWaiting.waitingMs)]);
  if (o.parked) {
    cards.push(['parked: sleeping', o.parked.byKind.sleep], ['parked: event', o.parked.byKind.event]);
    cards.push(['parked: input', o.parked.byKind.input]);
  }
  renderParked(o.parked ? o.parked.soonest : []);
  renderScheduling(o.tools || []);
  renderRefused(o.refusedTools || []);
  renderUpstreams(o.upstreams || [], o.at);
  $('overview').replaceChildren(
    ...cards.map(([name, value]) => {
      const card = document.createElement('div');
      card.className = 'card';
      card.dataset.name = name;
      const b = document.createElement('b');
      b.textContent = String(value);
      card.append(b, document.createTextNode(name));
      return card;
    }),
  );
}

function renderScheduling(tools) {
  $('tools').replaceChildren(
    ...tools.map((t) => {
      const row = document.createElement('tr');
      row.dataset.tool = t.tool;
      const rate = t.scheduling.rateLimit;
      const waiting = t.rateLimitedForMs > 0 ? ', waiting ' + age(t.rateLimitedForMs) : '';
      cell(row, t.tool);
      cell(row, t.running + '/' + (t.limit === undefined ? '-' : t.limit));
      cell(row, String(t.queued));
      cell(row, String(t.delayed));
      cell(
        row,
        Object.entries(t.queuedByPrincipal)
          .map(([p, n]) => p + ': ' + n)
          .join(', ') || '-',
      );
      cell(row, rate ? rate.max + ' per ' + age(rate.perMs) + waiting : '-');
      cell(row, String(t.counters.retries));
      cell(row, String(t.counters.timeouts));
      cell(row, String(t.counters.parked));
      return row;
    }),
  );
}

/** Parked tasks due first: what each waits for and until when (docs/durable-execution.md, "Waits"). */
function renderParked(soonest) {
  $('parked-tasks').hidden = soonest.length === 0;
  $('parked').replaceChildren(
    ...soonest.map((p) => {
      const row = document.createElement('tr');
      row.dataset.task = p.taskId;
      const link = document.createElement('a');
      link.href = 'tasks/' + encodeURIComponent(p.taskId);
      link.textContent = p.taskId;
      row.insertCell().append(link);
      cell(row, p.tool);
      cell(row, p.owner);
      cell(row, p.kind === 'sleep' ? 'sleep' : p.kind + ' ' + (p.name || ''));
      cell(row, p.until);
      return row;
    }),
  );
}

/** Catalog entries every process leaves out (too large, too deep, not compiling), with who published them and why. */
function renderRefused(refused) {
  $('refused-tools').hidden = refused.length === 0;
  $('refused').replaceChildren(
    ...refused.map((r) => {
      const row = document.createElement('tr');
      row.dataset.tool = r.tool;
      cell(row, r.tool);
      cell(row, r.publisher || 'unknown');
      cell(row, r.reason);
      return row;
    }),
  );
}

/** The gateway's upstreams as each worker sees them (docs/gateway.md); the section shows only when there are some. */
function renderUpstreams(upstreams, at) {
  $('gateway').hidden = upstreams.length === 0;
  $('upstreams').replaceChildren(
    ...upstreams.map((u) => {
      const row = document.createElement('tr');
      row.dataset.upstream = u.upstream;
      cell(row, u.upstream + ' (' + u.transport + ', ' + u.affinity + ')');
      cell(row, u.worker);
      cell(row, u.state, 'status').dataset.state = u.state;
      cell(row, age(at - u.since));
      cell(row, String(u.tools));
      cell(row, String(u.connections));
      cell(row, u.reason || '-');
      return row;
    }),
  );
}

async function getJson(path) {
  const response = await fetch(path, { headers: { accept: 'application/json' } });
  if (!response.ok) throw new Error(path + ': HTTP ' + response.status);
  return response.json();
}

async function refreshTasks() {
  try {
    const page = await getJson('api/tasks?' + query());
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
  try {
    renderOverview(await getJson('api/overview'));
  } catch (error) {
    $('error').textContent = String(error);
  }
}

$('filters').addEventListener('submit', (event) => {
  event.preventDefault();
  cursor = '';
  void refreshTasks();
});
$('more').addEventListener('click', () => {
  cursor = $('more').dataset.cursor || '';
  void refreshTasks();
});
void refreshTasks();
void refreshOverview();
setInterval(() => void refreshTasks(), 1000);
setInterval(() => void refreshOverview(), 5000);
