// dubbogw dashboard: polls /metrics every second and the admin API every
// few seconds, and draws the figures and sparklines from them. Everything
// is computed here, from the gateway's own Prometheus text.
'use strict';

const METRICS_EVERY_MS = 1000;
const ADMIN_EVERY_MS = 5000;
const FETCH_TIMEOUT_MS = 3000;
const HISTORY = 120; // sparkline points, one per metrics poll

const history = { rate: [], p50: [], p99: [], errors: [] };
let previous = null; // the last metrics snapshot
let routeRates = {}; // route name → req/s over the last poll

// ---- Prometheus text format ------------------------------------------------

// parseMetrics parses the Prometheus text exposition format into samples
// {name, labels, value}. Comments, blank and malformed lines are skipped.
function parseMetrics(text) {
  const samples = [];
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (!m) continue;
    const value = parseValue(m[3]);
    if (!Number.isNaN(value)) samples.push({ name: m[1], labels: parseLabels(m[2] || ''), value });
  }
  return samples;
}

function parseLabels(text) {
  const labels = {};
  const re = /([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"/g;
  for (let m; (m = re.exec(text)) !== null;) {
    labels[m[1]] = m[2].replace(/\\(.)/g, (_, c) => (c === 'n' ? '\n' : c));
  }
  return labels;
}

function parseValue(s) {
  switch (s) {
    case '+Inf': return Infinity;
    case '-Inf': return -Infinity;
    default: return Number(s);
  }
}

// snapshot sums what the dashboard needs from one scrape.
function snapshot(samples) {
  const s = { time: performance.now(), requests: 0, errors: 0, byRoute: {}, buckets: {}, sum: 0, count: 0, redis: null };
  for (const { name, labels, value } of samples) {
    switch (name) {
      case 'dubbogw_http_requests_total':
        s.requests += value;
        if (Number(labels.code) >= 500) s.errors += value;
        s.byRoute[labels.route] = (s.byRoute[labels.route] || 0) + value;
        break;
      case 'dubbogw_http_request_duration_seconds_bucket':
        s.buckets[labels.le] = (s.buckets[labels.le] || 0) + value;
        break;
      case 'dubbogw_http_request_duration_seconds_sum':
        s.sum += value;
        break;
      case 'dubbogw_http_request_duration_seconds_count':
        s.count += value;
        break;
      case 'dubbogw_redis_connected':
        s.redis = Object.assign(s.redis || {}, { connected: value === 1 });
        break;
      case 'dubbogw_redis_breaker_state':
        s.redis = Object.assign(s.redis || {}, { breaker: ['closed', 'open', 'half open'][value] || String(value) });
        break;
    }
  }
  return s;
}

// quantile estimates the q-quantile (0..1) of the requests between two
// histogram snapshots, interpolating linearly within a bucket as
// Prometheus's histogram_quantile does; null without requests.
function quantile(q, buckets, before) {
  const sorted = Object.entries(buckets)
    .map(([le, n]) => [parseValue(le), n - ((before && before[le]) || 0)])
    .sort((a, b) => a[0] - b[0]);
  const total = sorted.length > 0 ? sorted[sorted.length - 1][1] : 0;
  if (!(total > 0)) return null;
  const rank = q * total;
  let lower = 0;
  let below = 0;
  for (const [bound, cumulative] of sorted) {
    if (cumulative >= rank) {
      if (bound === Infinity) return lower; // beyond the largest bound
      const inBucket = cumulative - below;
      return lower + (bound - lower) * (inBucket > 0 ? (rank - below) / inBucket : 1);
    }
    lower = bound;
    below = cumulative;
  }
  return lower;
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

async function fetchText(path) {
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
  return response.text();
}

async function fetchJSON(path) {
  return JSON.parse(await fetchText(path));
}

function showMetrics(now) {
  const before = previous;
  previous = now;
  if (!before) return;
  const seconds = (now.time - before.time) / 1000;
  const requests = now.requests - before.requests;
  if (seconds <= 0 || requests < 0) return; // the gateway restarted: start again
  const rate = requests / seconds;
  const errors = (now.errors - before.errors) / seconds;
  push(history.rate, rate);
  push(history.errors, errors);
  setFigure('rate', rate, rate.toFixed(1));
  setFigure('errors', errors, errors.toFixed(2));
  $('error-share').textContent = rate > 0 ? `${((errors / rate) * 100).toFixed(1)}%` : '';

  let p50 = quantile(0.5, now.buckets, before.buckets);
  let p99 = quantile(0.99, now.buckets, before.buckets);
  $('latency-kind').textContent = '(histogram)';
  if (p50 === null && now.count > before.count) { // no buckets: the mean
    p50 = p99 = (now.sum - before.sum) / (now.count - before.count);
    $('latency-kind').textContent = '(mean)';
  }
  push(history.p50, p50);
  push(history.p99, p99);
  setFigure('p50', p50, formatSeconds(p50));
  setFigure('p99', p99, formatSeconds(p99));

  routeRates = {};
  for (const [route, n] of Object.entries(now.byRoute)) {
    routeRates[route] = (n - (before.byRoute[route] || 0)) / seconds;
  }
  for (const tr of $('routes').tBodies[0].rows) {
    tr.cells[4].textContent = (routeRates[tr.dataset.route] || 0).toFixed(1);
  }

  drawSparkline($('rate-spark'), history.rate);
  drawSparkline($('latency-spark'), history.p50, history.p99);
  drawSparkline($('errors-spark'), history.errors);

  const redis = $('redis');
  if (!now.redis) {
    redis.textContent = 'not configured';
    redis.className = 'figure muted';
  } else {
    const ok = now.redis.connected && now.redis.breaker === 'closed';
    redis.textContent = `${now.redis.connected ? 'connected' : 'disconnected'}, breaker ${now.redis.breaker || '?'}`;
    redis.className = `figure ${ok ? 'ok' : 'bad'}`;
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

function showServices({ registries, services, total }) {
  $('registries').replaceChildren(...registries.map((r) => {
    const span = document.createElement('div');
    span.textContent = `${r.name}: ${r.type} ${r.state}${r.degraded ? ' (degraded)' : ''}${r.error ? ` — ${r.error}` : ''}`;
    span.className = r.degraded || r.state === 'disconnected' ? 'bad' : 'ok';
    return span;
  }));
  const tbody = $('services').tBodies[0];
  tbody.replaceChildren();
  for (const s of services) {
    const open = s.providers.filter((p) => Object.values(p.breakers || {}).some((b) => b !== 'closed')).length;
    const health = s.providers.length === 0 ? ['no providers', 'bad']
      : open > 0 ? [`${open} breaker(s) not closed`, 'warn'] : ['ok', 'ok'];
    // Where the registry found them: interface level, application level
    // (with the application), or both.
    const found = [...new Set(s.providers.map((p) => (p.app ? `${p.source} (${p.app})` : p.source || '')))]
      .filter(Boolean).join(', ');
    row(tbody, [s.registry, s.service, s.state, [s.providers.length, 'num'], found, health]);
  }
  // A large registry is listed a page at a time (/admin/services?prefix=&limit=&after=).
  $('services-more').textContent = total > services.length
    ? `the first ${services.length} of ${total} services; /admin/services?prefix=… lists others` : '';
}

function showLimits({ global, routes }) {
  const tbody = $('limits').tBodies[0];
  tbody.replaceChildren();
  for (const l of [global, ...routes]) {
    row(tbody, [l.scope, l.kind, [l.limit || '∞', 'num'], [l.in_flight, 'num'], [l.rejected, 'num']]);
  }
}

// polls run a poll at once (a token was just given), each at most once at a time.
const polls = [];

// every runs task now and then again `ms` after each run ends, so a slow
// answer never stacks requests up.
function every(ms, task) {
  let timer = null;
  let running = false;
  const run = async () => {
    if (running) return;
    running = true;
    clearTimeout(timer);
    try {
      await task();
    } catch (err) {
      setStatus(`admin API unreachable: ${err.message}`, 'bad');
    }
    running = false;
    timer = setTimeout(run, ms);
  };
  polls.push(run);
  run();
}

every(METRICS_EVERY_MS, async () => {
  showMetrics(snapshot(parseMetrics(await fetchText('../../metrics'))));
  setStatus(`updated ${new Date().toLocaleTimeString()}`, 'muted');
});
every(ADMIN_EVERY_MS, async () => {
  const [routes, services, limits] = await Promise.all(
    ['../routes', '../services', '../limits'].map(fetchJSON));
  showRoutes(routes);
  showServices(services);
  showLimits(limits);
});
