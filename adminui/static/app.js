// dubbogw dashboard: polls /admin/summary every second (a compact answer
// whose size does not grow with the registries' providers) and draws the
// figures and sparklines from the difference of two polls; reads the
// routes every few seconds, and the services a page at a time, only while
// their table is on screen.
'use strict';

const SUMMARY_EVERY_MS = 1000;
const ADMIN_EVERY_MS = 5000;
const FETCH_TIMEOUT_MS = 3000;
const HISTORY = 120; // sparkline points, one per summary poll
const SERVICES_PAGE = 100; // services listed at a time (the table's data-page may say fewer)

const history = { rate: [], p50: [], p99: [], errors: [] };
let previous = null; // the last summary, with the time it was read
let routeRates = {}; // route name → req/s over the last poll

// quantile estimates the q-quantile (0..1) of the requests between two
// readings of a cumulative histogram (bucket upper bounds and the counts
// within each, count in all), interpolating linearly within a bucket as
// Prometheus's histogram_quantile does; null without requests.
function quantile(q, bounds, now, before) {
  const total = now.count - before.count;
  if (!(total > 0)) return null;
  const rank = q * total;
  let lower = 0;
  let below = 0;
  for (let i = 0; i < bounds.length; i++) {
    const cumulative = now.cumulative[i] - (before.cumulative[i] || 0);
    if (cumulative >= rank) {
      const inBucket = cumulative - below;
      return lower + (bounds[i] - lower) * (inBucket > 0 ? (rank - below) / inBucket : 1);
    }
    lower = bounds[i];
    below = cumulative;
  }
  return lower; // beyond the largest bound
}

// ---- drawing ----------------------------------------------------------------

const $ = (id) => document.getElementById(id);

function push(series, value) {
  series.push(value);
  if (series.length > HISTORY) series.shift();
}

// drawSparkline draws each series (null: no point) as a polyline scaled
// to the largest value of all of them.
function drawSparkline(svg, ...series) {
  const max = Math.max(1e-9, ...series.flat().filter((v) => v !== null));
  svg.replaceChildren(...series.map((values, n) => {
    const line = document.createElementNS('http://www.w3.org/2000/svg', 'polyline');
    const offset = HISTORY - values.length;
    const points = [];
    values.forEach((v, i) => {
      if (v !== null) points.push(`${offset + i},${(30 - (v / max) * 28 - 1).toFixed(2)}`);
    });
    line.setAttribute('points', points.join(' '));
    if (n === 1) line.classList.add('p99');
    return line;
  }));
}

function setFigure(id, value, text) {
  const el = $(id);
  el.textContent = text;
  el.dataset.value = value === null ? '' : String(value);
}

function formatSeconds(s) {
  if (s === null) return '–';
  if (s < 1e-3) return `${(s * 1e6).toFixed(0)}µs`;
  if (s < 1) return `${(s * 1e3).toFixed(s < 0.01 ? 2 : 1)}ms`;
  return `${s.toFixed(2)}s`;
}

function formatDuration(s) {
  const d = Math.floor(s / 86400);
  const h = Math.floor((s % 86400) / 3600);
  const m = Math.floor((s % 3600) / 60);
  if (d > 0) return `${d}d ${h}h`;
  if (h > 0) return `${h}h ${m}m`;
  return `${m}m ${Math.floor(s % 60)}s`;
}

// row appends a table row of cells; a cell is text or [text, className].
function row(tbody, cells) {
  const tr = tbody.insertRow();
  for (const cell of cells) {
    const [text, cls] = Array.isArray(cell) ? cell : [cell, ''];
    const td = tr.insertCell();
    td.textContent = String(text);
    if (cls) td.className = cls;
  }
  return tr;
}

function setStatus(text, cls) {
  const el = $('status');
  el.textContent = text;
  el.className = cls;
}

// ---- polling ----------------------------------------------------------------

// The admin token (admin.token), when the gateway has one: typed once into
// the page, kept in sessionStorage (this tab only, gone when it closes;
// never in a cookie, so no other site can make the browser send it) and
// sent as a bearer token with every call.
const TOKEN_KEY = 'dubbogw-admin-token';

function authHeaders(token) {
  return token ? { Authorization: `Bearer ${token}` } : {};
}

// askToken shows the token form: the admin API answered 401.
function askToken() {
  sessionStorage.removeItem(TOKEN_KEY);
  const form = $('login');
  if (form.hidden) {
    form.hidden = false;
    $('token').focus();
  }
}

$('login').addEventListener('submit', (event) => {
  event.preventDefault();
  const token = $('token').value.trim();
  if (token === '') return;
  sessionStorage.setItem(TOKEN_KEY, token);
  $('token').value = '';
  $('login').hidden = true;
  setStatus('connecting…', 'muted');
  for (const poll of polls) poll();
});

async function fetchJSON(path) {
  const sent = sessionStorage.getItem(TOKEN_KEY);
  const response = await fetch(path, {
    cache: 'no-store', headers: authHeaders(sent), signal: AbortSignal.timeout(FETCH_TIMEOUT_MS),
  });
  if (response.status === 401) {
    // A 401 to a call sent before the token was typed (still in flight
    // when it was) says nothing of the new token: only ask again when
    // the token refused is the one kept.
    if (sessionStorage.getItem(TOKEN_KEY) === sent) askToken();
    throw new Error('the admin API needs the admin token');
  }
  if (!response.ok) throw new Error(`${path}: HTTP ${response.status}`);
  return response.json();
}

function showSummary(s) {
  const now = { time: performance.now(), s };
  const before = previous;
  previous = now;
  showState(s);
  if (!before) return;
  const seconds = (now.time - before.time) / 1000;
  const requests = s.requests - before.s.requests;
  if (seconds <= 0 || requests < 0) return; // the gateway restarted: start again
  const rate = requests / seconds;
  const errors = Math.max(0, s.errors - before.s.errors) / seconds;
  push(history.rate, rate);
  push(history.errors, errors);
  setFigure('rate', rate, rate.toFixed(1));
  setFigure('errors', errors, errors.toFixed(2));
  $('error-share').textContent = rate > 0 ? `${((errors / rate) * 100).toFixed(1)}%` : '';

  const lat = s.latency;
  const was = before.s.latency;
  let p50 = null;
  let p99 = null;
  $('latency-kind').textContent = '(histogram)';
  if (lat.bounds.length > 0 && lat.bounds.length === was.bounds.length) {
    p50 = quantile(0.5, lat.bounds, lat, was);
    p99 = quantile(0.99, lat.bounds, lat, was);
  } else if (lat.count > was.count) { // no buckets: the mean
    p50 = p99 = (lat.sum - was.sum) / (lat.count - was.count);
    $('latency-kind').textContent = '(mean)';
  }
  push(history.p50, p50);
  push(history.p99, p99);
  setFigure('p50', p50, formatSeconds(p50));
  setFigure('p99', p99, formatSeconds(p99));

  const had = Object.fromEntries(before.s.routes.map((r) => [r.name, r.requests]));
  routeRates = {};
  for (const r of s.routes) {
    routeRates[r.name] = Math.max(0, r.requests - (had[r.name] || 0)) / seconds;
  }
  for (const tr of $('routes').tBodies[0].rows) {
    tr.cells[4].textContent = (routeRates[tr.dataset.route] || 0).toFixed(1);
  }

  drawSparkline($('rate-spark'), history.rate);
  drawSparkline($('latency-spark'), history.p50, history.p99);
  drawSparkline($('errors-spark'), history.errors);
}

// showState shows what one summary says by itself: build, readiness,
// reloads, load, breakers, Redis, registries and limits.
function showState(s) {
  $('build').textContent = `${s.version} · up ${formatDuration(s.uptime_seconds)} · ${s.status}`
    + (s.pending_services > 0 ? ` (${s.pending_services} services unread)` : '');
  $('build').className = s.ready ? 'muted' : 'bad';
  const reload = $('reload');
  reload.hidden = s.reload.last_successful;
  reload.textContent = s.reload.last_successful ? '' : `the last reload was refused: ${s.reload.last_error || '?'}`;

  const global = s.limits.find((l) => l.scope === 'global');
  $('inflight').textContent = String(s.in_flight);
  $('load').textContent = `${s.connections.open} connections`
    + (global && global.limit > 0 ? ` · ${(global.saturation * 100).toFixed(0)}% of the limit` : '');
  const b = s.breakers;
  const breakers = $('breakers');
  breakers.textContent = `${b.routes} route · ${b.providers} provider · ${b.services} service`;
  breakers.className = b.routes + b.providers + b.services > 0 ? 'bad' : 'ok';

  const redis = $('redis');
  if (!s.redis) {
    redis.textContent = 'not configured';
    redis.className = 'figure muted';
  } else {
    const ok = s.redis.connected && s.redis.breaker === 'closed';
    redis.textContent = `${s.redis.connected ? 'connected' : 'disconnected'}, breaker ${s.redis.breaker}`;
    redis.className = `figure ${ok ? 'ok' : 'bad'}`;
  }

  $('registries').replaceChildren(...s.registries.map((r) => {
    const div = document.createElement('div');
    const providers = r.providers === null ? '' : `, ${r.providers} providers`;
    const pending = r.pending > 0 ? `, ${r.pending} unread` : '';
    div.textContent = `${r.name}: ${r.type} ${r.state}${r.degraded ? ' (degraded)' : ''} · ${r.services} services${providers}${pending}`
      + (r.error ? ` — ${r.error}` : '');
    div.className = r.degraded || r.state === 'disconnected' ? 'bad' : 'ok';
    return div;
  }));

  const tbody = $('limits').tBodies[0];
  tbody.replaceChildren();
  for (const l of s.limits) {
    const saturation = l.limit > 0 ? `${(l.saturation * 100).toFixed(0)}%` : '–';
    row(tbody, [l.scope, l.kind, [l.limit || '∞', 'num'], [l.in_flight, 'num'], [saturation, 'num'], [l.rejected, 'num']]);
  }
}

function showRoutes({ routes }) {
  const tbody = $('routes').tBodies[0];
  tbody.replaceChildren();
  for (const r of routes) {
    const match = [(r.methods || []).join(','), r.host, r.path || (r.prefix && `${r.prefix}*`)].filter(Boolean).join(' ');
    const tr = row(tbody, [r.name, match, r.upstream || r.dubbo || '', r.filters.join(', '), [(routeRates[r.name] || 0).toFixed(1), 'num']]);
    tr.dataset.route = r.name;
  }
}

// ---- services, a page at a time -------------------------------------------

// The services view: the page shown (after: the "next" that led to it,
// back: those of the pages before), its prefix, and whether it is on
// screen (only then is /admin/services asked).
const services = { visible: false, prefix: '', after: '', back: [], next: '' };

function pageSize() {
  return Number($('services').dataset.page) || SERVICES_PAGE;
}

function servicesPath() {
  const q = new URLSearchParams({ limit: String(pageSize()) });
  if (services.prefix !== '') q.set('prefix', services.prefix);
  if (services.after !== '') q.set('after', services.after);
  return `../services?${q}`;
}

function showServices({ services: list, total, next }) {
  const tbody = $('services').tBodies[0];
  tbody.replaceChildren();
  for (const s of list) {
    const serviceBreakers = Object.entries(s.service_breakers || {}).map(([route, state]) => `${route} ${state}`);
    const open = s.providers.filter((p) => Object.values(p.breakers || {}).some((b) => b !== 'closed')).length;
    const health = s.providers.length === 0 ? ['no providers', 'bad']
      : serviceBreakers.length > 0 ? [`service breaker: ${serviceBreakers.join(', ')}`, 'bad']
        : open > 0 ? [`${open} provider breaker(s) not closed`, 'warn'] : ['ok', 'ok'];
    // Where the registry found them: interface level, application level
    // (with the application), or both.
    const found = [...new Set(s.providers.map((p) => (p.app ? `${p.source} (${p.app})` : p.source || '')))]
      .filter(Boolean).join(', ');
    // Dubbo governance rules read for the service (config centre): a
    // refused one (the last good one still applies) is shown with why.
    const rules = s.rules || [];
    const refused = rules.some((r) => r.state === 'refused');
    const ruleText = rules.map((r) => `${r.key} ${r.state}${r.error ? `: ${r.error}` : ''}${r.ignored ? ` (not applied: ${r.ignored})` : ''}`).join('; ');
    row(tbody, [s.registry, s.service, s.state, [s.providers.length, 'num'], found, health, [ruleText, refused ? 'bad' : '']]);
  }
  services.next = next || '';
  const first = services.back.length * pageSize();
  $('services-more').textContent = list.length === 0
    ? (total > 0 ? `none here of ${total}` : 'no services')
    : `${first + 1}–${first + list.length} of ${total}`;
  $('services-next').disabled = services.next === '';
  $('services-prev').disabled = services.back.length === 0;
  $('services-first').disabled = services.back.length === 0;
}

// polls run a poll at once (a token was just given), each at most once at a time.
const polls = [];

// every runs task now and then again `ms` after each run ends, so a slow
// answer never stacks requests up; the function it returns runs the task
// now (or as soon as the run under way ends).
function every(ms, task) {
  let timer = null;
  let running = false;
  let again = false;
  const run = async () => {
    if (running) {
      again = true;
      return;
    }
    running = true;
    clearTimeout(timer);
    try {
      await task();
    } catch (err) {
      setStatus(`admin API unreachable: ${err.message}`, 'bad');
    }
    running = false;
    if (again) {
      again = false;
      run();
      return;
    }
    timer = setTimeout(run, ms);
  };
  polls.push(run);
  run();
  return run;
}

every(SUMMARY_EVERY_MS, async () => {
  showSummary(await fetchJSON('../summary'));
  setStatus(`updated ${new Date().toLocaleTimeString()}`, 'muted');
});
every(ADMIN_EVERY_MS, async () => {
  showRoutes(await fetchJSON('../routes'));
});
const refreshServices = every(ADMIN_EVERY_MS, async () => {
  if (!services.visible || document.hidden) return;
  showServices(await fetchJSON(servicesPath()));
});

new IntersectionObserver((entries) => {
  const visible = entries[entries.length - 1].isIntersecting;
  const appeared = visible && !services.visible;
  services.visible = visible;
  if (appeared) refreshServices();
}).observe($('services-view'));
document.addEventListener('visibilitychange', () => {
  if (!document.hidden && services.visible) refreshServices();
});

function goToPage(after, back) {
  services.after = after;
  services.back = back;
  refreshServices();
}
$('services-next').addEventListener('click', () => {
  if (services.next !== '') goToPage(services.next, [...services.back, services.after]);
});
$('services-prev').addEventListener('click', () => {
  goToPage(services.back[services.back.length - 1] || '', services.back.slice(0, -1));
});
$('services-first').addEventListener('click', () => goToPage('', []));
let filterTimer = null;
$('services-filter').addEventListener('input', () => {
  clearTimeout(filterTimer);
  filterTimer = setTimeout(() => {
    services.prefix = $('services-filter').value.trim();
    goToPage('', []);
  }, 300);
});
