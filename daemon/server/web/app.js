// The hyperfed web view: reads /api/v1/* (the Admin service's replies as
// JSON, the same hyperfedctl --json prints; docs/operations.md "Web view")
// every REFRESH_MS and redraws.
// Everything shown comes from sites that may lie: it goes into the page as
// text (textContent), never as HTML.
'use strict';

const REFRESH_MS = 2000;
const TOKEN_KEY = 'hyperfed-admin-token';
const SVG = 'http://www.w3.org/2000/svg';

// A token in the address (#token=...) is moved into this tab's storage and
// out of the address bar and history.
if (location.hash.startsWith('#token=')) {
  sessionStorage.setItem(TOKEN_KEY, decodeURIComponent(location.hash.slice(7)));
  history.replaceState(null, '', location.pathname + location.search);
}

class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

async function api(path) {
  const headers = {};
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (token) headers.Authorization = 'Bearer ' + token;
  const r = await fetch('/api/v1/' + path, { headers, cache: 'no-store' });
  let body;
  try {
    body = await r.json();
  } catch (e) {
    throw new ApiError(r.status, r.statusText || 'not JSON');
  }
  if (!r.ok) throw new ApiError(r.status, body.error || r.statusText);
  return body;
}

// Integers, 64-bit ones too, arrive as JSON numbers; a field a site left out
// (an older daemon) counts as 0.
const num = (v) => Number(v || 0);

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === 'class') e.className = v;
    else e.setAttribute(k, v);
  }
  for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return e;
}

function ago(ms) {
  if (ms < 0) return 'never';
  const s = Math.round(ms / 1000);
  if (s < 120) return s + ' s';
  if (s < 7200) return Math.round(s / 60) + ' min';
  return Math.round(s / 3600) + ' h';
}

const fixed = (x, d) => num(x).toFixed(d);
const when = (ms) => (num(ms) ? new Date(num(ms)).toLocaleTimeString() : '');
const stateClass = (s) => 'state-' + s.replace(',', '-');

function drawSites(status) {
  const body = document.querySelector('#sites tbody');
  body.replaceChildren();
  for (const s of status.sites) {
    body.append(el('tr', { class: 'site', 'data-site': s.site, 'data-state': s.state },
      el('td', {}, s.site),
      el('td', { class: 'num' }, s.label),
      el('td', { class: stateClass(s.state) }, s.state),
      el('td', { class: 'num' }, num(s.load)),
      el('td', { class: 'num' }, fixed(s.capacity, 1)),
      el('td', { class: 'num' }, fixed(s.load_per_capacity, 2)),
      el('td', {}, s.state.startsWith('self') ? 'now' : ago(num(s.age_ms))),
      el('td', {}, s.last_round)));
  }
  const down = status.sites.filter((s) => s.state === 'down').length;
  document.getElementById('summary').textContent =
    `${status.sites.length} sites, ${down} down; round mode ${status.algorithm}` +
    (status.last_round ? `; last round ${status.last_round}` : '') +
    (status.insecure ? '; WARNING: insecure (no TLS, no authentication)' : '');
}

// Where position `label` of a `dim`-cube is drawn, in a 0..1 square: up to
// three dimensions as a drawn cube, beyond as a grid (low bits across, high
// bits down) where neighbours differ in one bit.
function place(label, dim) {
  if (dim <= 3) {
    const x = label & 1, y = (label >> 1) & 1, z = (label >> 2) & 1;
    return [0.15 + 0.5 * x + 0.2 * z, 0.85 - 0.55 * y - 0.2 * z];
  }
  const colBits = Math.ceil(dim / 2);
  const cols = 1 << colBits, rows = 1 << (dim - colBits);
  const c = label & (cols - 1), r = label >> colBits;
  return [(c + 0.5) / cols, (r + 0.5) / rows];
}

function drawCube(topo) {
  const svg = document.getElementById('cube');
  svg.replaceChildren();
  const dim = topo.dimension;
  const n = 1 << dim;
  const W = 640, H = 352;
  svg.setAttribute('viewBox', `0 0 ${W} ${H}`);
  const at = (l) => { const [x, y] = place(l, dim); return [x * W, y * H]; };
  const byLabel = new Map(topo.sites.map((s) => [s.label, s]));
  const treeEdges = new Set();
  for (const sc of topo.subcubes || [])
    for (const e of sc.edges || []) treeEdges.add(Math.min(e.child, e.parent) + ':' + Math.max(e.child, e.parent));
  if (dim <= 6) {
    for (let a = 0; a < n; a++) {
      for (let d = 0; d < dim; d++) {
        const b = a ^ (1 << d);
        if (b < a) continue;
        const [x1, y1] = at(a), [x2, y2] = at(b);
        const line = document.createElementNS(SVG, 'line');
        line.setAttribute('x1', x1); line.setAttribute('y1', y1);
        line.setAttribute('x2', x2); line.setAttribute('y2', y2);
        line.setAttribute('class', treeEdges.has(a + ':' + b) ? 'edge tree' : 'edge');
        svg.append(line);
      }
    }
  }
  const r = dim <= 3 ? 26 : Math.max(6, 200 / (1 << Math.ceil(dim / 2)));
  for (let l = 0; l < n; l++) {
    const s = byLabel.get(l);
    const state = s ? s.state.replace(',', '-') : 'empty';
    const g = document.createElementNS(SVG, 'g');
    g.setAttribute('class', 'node node-' + state);
    g.setAttribute('data-label', l);
    g.setAttribute('data-state', s ? s.state : 'empty');
    if (s) g.setAttribute('data-site', s.site);
    const [x, y] = at(l);
    const c = document.createElementNS(SVG, 'circle');
    c.setAttribute('cx', x); c.setAttribute('cy', y); c.setAttribute('r', r);
    const title = document.createElementNS(SVG, 'title');
    title.textContent = s ? `${s.site} (label ${l}): ${s.state}, load ${num(s.load)}, capacity ${num(s.capacity)}`
                          : `label ${l}: no site`;
    c.append(title);
    g.append(c);
    if (r >= 14) {
      const name = document.createElementNS(SVG, 'text');
      name.setAttribute('x', x); name.setAttribute('y', y - r - 6);
      name.setAttribute('class', 'name');
      name.textContent = s ? s.site : `(${l})`;
      g.append(name);
      if (s) {
        const load = document.createElementNS(SVG, 'text');
        load.setAttribute('x', x); load.setAttribute('y', y + 4);
        load.textContent = `${num(s.load)} / ${fixed(s.capacity, 0)}`;
        g.append(load);
      }
    }
    svg.append(g);
  }
  // The mode names the failed or empty positions when there are any.
  document.getElementById('mode').textContent = `${dim}-cube; next round: ${topo.mode}`;
}

function drawRounds(rounds, names) {
  document.getElementById('rounds-site').textContent = rounds.site;
  const body = document.querySelector('#rounds tbody');
  body.replaceChildren();
  for (const r of rounds.rounds) {
    const result = !r.done ? 'running' : r.ok ? 'finished' : 'ended early';
    const site = (label) => names.get(label) || `label ${label}`;
    const transfers = (r.transfers || []).map((t) => `${site(t.from)}\u2192${site(t.to)} ${num(t.count)}`).join(', ');
    body.append(el('tr', { class: 'round', 'data-round': r.round_id, 'data-done': r.done,
                           'data-transfers': (r.transfers || []).length },
      el('td', {}, r.round_id + (r.dry_run ? ' (dry run)' : '')),
      el('td', {}, when(r.started_ms)),
      el('td', { class: !r.done ? 'running' : r.ok ? '' : 'failed' }, result),
      el('td', {}, r.mode),
      el('td', { class: 'num' }, r.steps),
      el('td', {}, transfers || 'none'),
      el('td', { class: 'num' }, num(r.moved)),
      el('td', {}, `${fixed(r.max_share_error_before, 1)} \u2192 ${fixed(r.max_share_error_after, 1)}`)));
  }
}

// An SVG element with attributes and, optionally, text.
function svgEl(tag, attrs, text) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = String(text);
  return e;
}

// A wait for people: "850 ms", "45 s", "7.5 min", "2.1 h".
function waitText(ms) {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const s = ms / 1000;
  if (s < 120) return `${Math.round(s)} s`;
  const min = s / 60;
  if (min < 120) return `${min < 10 ? min.toFixed(1) : Math.round(min)} min`;
  return `${(min / 60).toFixed(1)} h`;
}

// The step of the wait axis: the first that needs at most 5 ticks.
const WAIT_STEPS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400]
  .map((s) => s * 1000);
function waitStep(max) {
  for (const step of WAIT_STEPS) if (max / step <= 5) return step;
  return Math.ceil(max / 5 / 86400000) * 86400000;
}

// Hourly p50 and p95 waits as bars side by side, "p50 / p95" above each
// pair (docs/operations.md, "Web view"). The site answering is this one.
function drawWaits(w) {
  const hours = w.hours || [];
  const started = num(w.started);
  const svg = document.getElementById('wait-chart');
  const summary = document.getElementById('wait-summary');
  svg.replaceChildren();
  svg.setAttribute('data-started', started);
  if (started === 0) {
    summary.textContent = `no job started in the last ${hours.length || 6} hours`;
    summary.className = 'empty-state';
    svg.classList.add('gone');
    document.getElementById('wait-legend').hidden = true;
    return;
  }
  summary.className = '';
  summary.textContent = `${started} jobs started in the last ${hours.length} hours; they waited ` +
    `${waitText(num(w.p50_ms))} (median), ${waitText(num(w.p95_ms))} (p95)`;
  svg.classList.remove('gone');
  document.getElementById('wait-legend').hidden = false;
  const W = 832, H = 256, left = 64, right = 8, top = 18, bottom = 40;
  svg.setAttribute('viewBox', `0 0 ${W} ${H}`);
  const max = Math.max(1, ...hours.map((h) => num(h.p95_ms)));
  const step = waitStep(max);
  const ceiling = Math.ceil(max / step) * step;
  const y = (ms) => top + (H - top - bottom) * (1 - ms / ceiling);
  for (let t = 0; t <= ceiling; t += step) {
    svg.append(svgEl('line', { class: 'axis', x1: left, x2: W - right, y1: y(t), y2: y(t) }));
    svg.append(svgEl('text', { class: 'tick end', x: left - 6, y: y(t) + 4 }, waitText(t)));
  }
  const slot = (W - left - right) / Math.max(1, hours.length);
  const bar = Math.min(36, slot / 3);
  hours.forEach((h, i) => {
    const x0 = left + i * slot + slot / 2;
    const n = num(h.started);
    const label = new Date(num(h.start_ms)).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
    svg.append(svgEl('text', { class: 'tick', x: x0, y: H - bottom + 16 }, label));
    svg.append(svgEl('text', { class: 'tick', x: x0, y: H - bottom + 30 }, n ? `${n} started` : 'none started'));
    if (!n) return;
    [['p50', num(h.p50_ms), -1], ['p95', num(h.p95_ms), 1]].forEach(([q, ms, side]) => {
      const x = x0 + (side < 0 ? -bar - 1 : 1);
      const yy = y(ms);
      const r = svgEl('rect', { class: 'bar ' + q, x, y: yy, width: bar, height: Math.max(1, H - bottom - yy),
                                'data-hour': num(h.start_ms), 'data-ms': ms });
      r.append(svgEl('title', {}, `${label}: ${q} wait ${waitText(ms)} of ${n} jobs started`));
      svg.append(r);
    });
    // Both values over the pair (side by side they would run into each other).
    svg.append(svgEl('text', { class: 'value', x: x0, y: y(num(h.p95_ms)) - 5 },
                     `${waitText(num(h.p50_ms))} / ${waitText(num(h.p95_ms))}`));
  });
}

// Where this site's arriving jobs went since its daemon started: a bar for
// the new jobs that queued here and stayed (PlacementCounters.kept: a job
// that starts at once is never offered) and one per peer they were placed at.
function drawPlacement(w) {
  const p = w.placement || {};
  const svg = document.getElementById('placement-chart');
  const summary = document.getElementById('placement-summary');
  svg.replaceChildren();
  const rows = [{ site: '', name: 'kept here', jobs: num(p.kept), cls: 'kept' }]
    .concat((p.to || []).map((t) => ({ site: t.site, name: t.site, jobs: num(t.jobs), cls: 'peer' })));
  const total = rows.reduce((a, r) => a + r.jobs, 0);
  if (!p.enabled && total === 0) {
    summary.textContent = 'placement at arrival is off at this site (balancer.placement: false): jobs stay where ' +
      'they are submitted until a round moves them';
    summary.className = 'empty-state';
    svg.classList.add('gone');
    return;
  }
  if (total === 0) {
    summary.textContent = 'no job has arrived at this site since its daemon started';
    summary.className = 'empty-state';
    svg.classList.add('gone');
    return;
  }
  summary.className = 'muted';
  summary.textContent = `since this daemon started: ${num(p.placed)} jobs placed at peers, ${num(p.kept)} new jobs ` +
    'that queued here stayed (a job that starts at once on arrival is not counted)' +
    (num(p.failed) ? `, ${num(p.failed)} chosen for a peer but not moved` : '') +
    (p.enabled ? '' : ' (placement is off now)');
  svg.classList.remove('gone');
  const W = 832, rowH = 26, left = 140, right = 60;
  const H = rows.length * rowH + 8;
  svg.setAttribute('viewBox', `0 0 ${W} ${H}`);
  const max = Math.max(1, ...rows.map((r) => r.jobs));
  rows.forEach((r, i) => {
    const y = 4 + i * rowH;
    const width = Math.max(r.jobs ? 2 : 0, (W - left - right) * r.jobs / max);
    svg.append(svgEl('text', { class: 'end', x: left - 8, y: y + rowH / 2 + 4 }, r.name));
    const rect = svgEl('rect', { class: 'bar ' + r.cls, x: left, y: y + 3, width, height: rowH - 8,
                                 'data-site': r.site, 'data-jobs': r.jobs });
    rect.append(svgEl('title', {}, `${r.name}: ${r.jobs} jobs`));
    svg.append(rect);
    svg.append(svgEl('text', { class: 'value start', x: left + width + 6, y: y + rowH / 2 + 4 }, r.jobs));
  });
}

const TERMINAL = new Set(['COMMITTED', 'ABORTED', 'FORCED']);

function drawMigrations(list) {
  const body = document.querySelector('#migrations tbody');
  body.replaceChildren();
  const now = Date.now();
  const open = list.migrations.filter((m) => !TERMINAL.has(m.state));
  for (const m of open) {
    const keys = m.job_keys || [];
    const held = keys.slice(0, 5).join(', ') + (keys.length > 5 ? ` and ${keys.length - 5} more` : '');
    body.append(el('tr', { class: 'migration', 'data-migration': m.id, 'data-state': m.state },
      el('td', {}, m.id),
      el('td', {}, m.direction),
      el('td', {}, m.peer),
      el('td', {}, m.state),
      el('td', {}, `${num(m.jobs)}: ${held}`),
      el('td', {}, ago(now - num(m.updated_ms))),
      el('td', {}, m.round_id)));
  }
  if (open.length === 0) body.append(el('tr', {}, el('td', { colspan: 7, class: 'muted' }, 'none')));
}

let refreshes = 0;

async function refresh() {
  try {
    const [status, topo, rounds, migrations, waits] = await Promise.all(
      [api('status'), api('topology'), api('rounds?limit=10'), api('migrations?limit=200'), api('waits')]);
    document.getElementById('login').hidden = true;
    document.getElementById('view').hidden = false;
    document.getElementById('site').textContent = '\u2014 ' + status.site;
    drawSites(status);
    drawCube(topo);
    drawRounds(rounds, new Map(topo.sites.map((s) => [s.label, s.site])));
    drawMigrations(migrations);
    for (const e of document.querySelectorAll('.this-site')) e.textContent = status.site;
    drawWaits(waits);
    drawPlacement(waits);
    refreshes++;
    document.body.setAttribute('data-refreshes', refreshes);
    document.getElementById('refresh').textContent = `updated ${new Date().toLocaleTimeString()}, every ${REFRESH_MS / 1000} s`;
    document.getElementById('refresh').className = 'muted';
  } catch (e) {
    if (e.status === 401 || e.status === 403) {
      document.getElementById('login').hidden = false;
      document.getElementById('view').hidden = true;
      document.getElementById('login-error').textContent = sessionStorage.getItem(TOKEN_KEY) ? e.message : '';
    }
    const r = document.getElementById('refresh');
    r.textContent = `cannot read this site: ${e.message} (retrying every ${REFRESH_MS / 1000} s)`;
    r.className = 'error';
  }
  setTimeout(refresh, REFRESH_MS);
}

document.getElementById('login').addEventListener('submit', (ev) => {
  ev.preventDefault();
  sessionStorage.setItem(TOKEN_KEY, document.getElementById('token').value);
  document.getElementById('token').value = '';
});

document.getElementById('search').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  const out = document.getElementById('explanation');
  const job = document.getElementById('job').value.trim();
  if (!job) return;
  out.textContent = 'asking\u2026';
  try {
    const r = await api('explain?job=' + encodeURIComponent(job));
    out.textContent = r.explanation;
    out.className = '';
  } catch (e) {
    out.textContent = e.message;
    out.className = 'error';
  }
});

refresh();
