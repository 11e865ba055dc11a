// The browser script of the dashboard's "Last hour" section (dashboard.html): reads the activity figures every 5 s and
// draws them with uPlot (tasks per minute by status, latency percentiles, queue depth) plus per-tool and
// per-principal tables. Values reach the DOM through textContent only. A module: the page loads uPlot before it.
// Relative to the page (/admin/), like every URL of the dashboard.
const ACTIVITY = 'api/activity';
const root = document.getElementById('charts');
const COLORS = {
  created: '#5a6b8c',
  completed: '#17803d',
  failed: '#b42318',
  cancelled: '#9aa1ac',
  waitP50: '#7aa5e8',
  waitP95: '#1f5fbf',
  runP50: '#f0b461',
  runP95: '#a15c00',
  waiting: '#1f5fbf',
  active: '#17803d',
  delayed: '#a15c00',
  held: '#b42318',
};
const plots = {};
const UNITS = [
  [86_400_000, ' d'],
  [3_600_000, ' h'],
  [60_000, ' min'],
  [1000, ' s'],
];
// A duration in its largest unit: latencies run from milliseconds to days (activity.ts LATENCY_BOUNDS_MS).
const msText = (v) => {
  if (v == null) return null;
  const [size, unit] = UNITS.find(([size]) => v >= size) || [1, ' ms'];
  return Math.round((v / size) * 10) / 10 + unit;
};

function box(id, title) {
  let el = document.getElementById(id);
  if (el) return el;
  const figure = document.createElement('figure');
  figure.className = 'chart';
  const caption = document.createElement('figcaption');
  caption.textContent = title;
  el = document.createElement('div');
  el.id = id;
  figure.append(caption, el);
  root.querySelector('.chart-row').append(figure);
  return el;
}

function size() {
  const width = Math.max(300, Math.floor((root.clientWidth - 40) / 3));
  return { width, height: 190 };
}

const count = (label, color, stroke) => ({
  label,
  stroke: color,
  width: stroke || 1.5,
  paths: uPlot.paths.stepped({ align: 1 }),
  points: { show: true, size: 4, fill: color },
  value: (u, v) => (v == null ? '-' : String(v)),
});
const ms = (label, color, dash) => ({
  label,
  stroke: color,
  width: 1.5,
  dash,
  spanGaps: false,
  points: { show: true, size: 5, fill: color },
  value: (u, v) => (v == null ? '-' : msText(v)),
});

// Counts on a linear axis from 0. Latencies on a log axis: they span milliseconds to hours, and on a linear one a
// slow tool's tail flattens every other line to the floor.
const LINEAR = { range: (u, min, max) => [0, Math.max(1, max == null ? 1 : max * 1.1)] };
const LOG = {
  distr: 3,
  log: 10,
  range: (u, min, max) => (min == null ? [1, 1000] : uPlot.rangeLog(min, Math.max(max, min * 10), 10, true)),
};

function plot(key, title, series, data, msAxis) {
  const el = box('chart-' + key, title);
  const { width, height } = size();
  if (plots[key]) {
    plots[key].setData(data);
    return;
  }
  plots[key] = new uPlot(
    {
      width,
      height,
      series: [{}, ...series],
      scales: { y: msAxis ? LOG : LINEAR },
      axes: [{}, { size: 64, ...(msAxis ? { values: (u, vals) => vals.map(msText) } : {}) }],
      legend: { live: true },
      cursor: { drag: { x: false, y: false } },
    },
    data,
    el,
  );
  // What the chart draws, for the page's tests.
  el.dataset.yScale = plots[key].scales.y.distr === 3 ? 'log' : 'linear';
}

function table(id, title, headings, rows) {
  let el = document.getElementById(id);
  if (!el) {
    const wrap = document.createElement('div');
    wrap.className = 'breakdown';
    const h = document.createElement('h3');
    h.textContent = title;
    el = document.createElement('table');
    el.id = id;
    const head = el.createTHead().insertRow();
    for (const text of headings) {
      const th = document.createElement('th');
      th.textContent = text;
      head.append(th);
    }
    el.createTBody();
    wrap.append(h, el);
    root.querySelector('.breakdown-row').append(wrap);
  }
  const body = el.tBodies[0];
  body.replaceChildren();
  const max = Math.max(1, ...rows.map((r) => r.weight));
  for (const r of rows) {
    const tr = body.insertRow();
    tr.dataset.key = r.key;
    r.cells.forEach((text, i) => {
      const td = tr.insertCell();
      if (i === 0) {
        const bar = document.createElement('span');
        bar.className = 'hbar';
        bar.style.width = Math.round((r.weight / max) * 6) + 'rem';
        const label = document.createElement('span');
        label.textContent = text;
        td.append(bar, label);
      } else td.textContent = text == null ? '-' : String(text);
    });
  }
  if (rows.length === 0) {
    const td = body.insertRow().insertCell();
    td.colSpan = headings.length;
    td.className = 'muted';
    td.textContent = 'nothing in the last hour';
  }
}

function draw(r) {
  const x = r.minutes.map((m) => m / 1000);
  plot(
    'tasks',
    'Tasks per minute: created and finished by status',
    [
      count('created', COLORS.created, 2),
      count('completed', COLORS.completed),
      count('failed', COLORS.failed),
      count('cancelled', COLORS.cancelled),
    ],
    [x, r.created, r.finished.completed, r.finished.failed, r.finished.cancelled],
  );
  plot(
    'latency',
    'Latency percentiles per minute (upper bucket bounds)',
    [
      ms('queue wait p50', COLORS.waitP50),
      ms('queue wait p95', COLORS.waitP95, [4, 3]),
      ms('run p50', COLORS.runP50),
      ms('run p95', COLORS.runP95, [4, 3]),
    ],
    [x, r.queueWaitMs.p50, r.queueWaitMs.p95, r.runTimeMs.p50, r.runTimeMs.p95],
    true,
  );
  // held: jobs held back by per-principal caps, most of them among delayed (docs/observability.md).
  plot(
    'depth',
    'Queue depth (jobs, sampled)',
    [
      count('waiting', COLORS.waiting, 2),
      count('active', COLORS.active),
      count('delayed', COLORS.delayed),
      { ...count('held by caps', COLORS.held), dash: [4, 3] },
    ],
    [x, r.depth.waiting, r.depth.active, r.depth.delayed, r.depth.held || r.minutes.map(() => null)],
  );
  table(
    'per-tool',
    'Per tool (last hour)',
    ['tool', 'created', 'completed', 'failed', 'cancelled', 'run p50', 'run p95'],
    r.tools.map((t) => ({
      key: t.tool,
      weight: t.created,
      cells: [
        t.tool,
        t.created,
        t.finished.completed,
        t.finished.failed,
        t.finished.cancelled,
        msText(t.runP50Ms),
        msText(t.runP95Ms),
      ],
    })),
  );
  table(
    'per-principal',
    'Per principal (last hour, busiest first)',
    ['principal', 'created', 'finished'],
    r.owners.map((o) => ({ key: o.owner, weight: o.created, cells: [o.owner, o.created, o.finished] })),
  );
  root.dataset.updated = String(Date.now());
}

async function refresh() {
  try {
    const response = await fetch(ACTIVITY, { headers: { accept: 'application/json' } });
    if (!response.ok) throw new Error('HTTP ' + response.status);
    draw(await response.json());
    root.querySelector('.chart-error').textContent = '';
  } catch (error) {
    root.querySelector('.chart-error').textContent = 'charts: ' + String(error.message || error);
  }
}
if (root && typeof uPlot !== 'undefined') {
  void refresh();
  setInterval(() => void refresh(), 5000);
}
