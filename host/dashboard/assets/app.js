// The operator dashboard: polls /dashboard/api/* with timeouts (never a
// call that can hang the page), keeps every client-side buffer bounded, and
// writes text only through textContent (model names and event data come
// from callers).
'use strict';
(function () {
  const LIVE_EVERY = 2000;      // ms between live snapshots
  const SLOW_EVERY = 10000;     // history and accounts
  const MAX_POINTS = 300;       // live chart points (10 minutes at 2 s)
  const MAX_FEED = 200;         // feed entries kept in the page
  const TIMEOUT = 8000;         // a fetch's own deadline
  const WAIT = '10s';           // the feed's long poll (server bound 10 s)

  const $ = (id) => document.getElementById(id);
  const status = $('status');

  async function getJSON(url, timeout) {
    const ac = new AbortController();
    const t = setTimeout(() => ac.abort(), timeout || TIMEOUT);
    try {
      const r = await fetch(url, { signal: ac.signal, credentials: 'same-origin', cache: 'no-store' });
      if (r.status === 401) {
        location.assign('/dashboard/login');
        throw new Error('logged out');
      }
      if (!r.ok) throw new Error(url.split('?')[0] + ': HTTP ' + r.status);
      return await r.json();
    } finally {
      clearTimeout(t);
    }
  }

  function problem(what, err) {
    status.textContent = what + ': ' + (err && err.name === 'AbortError' ? 'timed out' : String(err && err.message || err));
    status.className = 'bad';
  }

  const num = (v, d) => (v === null || v === undefined || !isFinite(v)) ? '–' : Number(v).toLocaleString('en-US', { maximumFractionDigits: d === undefined ? 2 : d });
  const usd = (v) => '$' + Number(v || 0).toFixed(6);
  const ms = (s) => num(s * 1000, 1) + ' ms';

  function setTile(id, text, value) {
    const el = $(id);
    el.textContent = text;
    if (value !== undefined) el.dataset.value = String(value);
  }

  function row(tbody, cells, cls) {
    const tr = document.createElement('tr');
    if (cls) tr.className = cls;
    for (const c of cells) {
      const td = document.createElement('td');
      td.textContent = c;
      tr.appendChild(td);
    }
    tbody.appendChild(tr);
  }

  function table(id, rows, cells) {
    const tbody = $(id).tBodies[0];
    tbody.replaceChildren();
    for (const r of rows) row(tbody, cells(r));
    $(id).dataset.rows = String(rows.length);
  }

  // Charts.
  const palette = ['#4dabf7', '#ff922b', '#51cf66', '#f06595', '#fcc419', '#845ef7', '#20c997', '#adb5bd'];
  function width(el) { return Math.max(300, el.clientWidth || 600); }
  function chart(el, series, data) {
    const opts = {
      width: width(el), height: 220,
      scales: { x: { time: true } },
      axes: [{ stroke: '#8a97a6', grid: { stroke: '#2a3340' } }, { stroke: '#8a97a6', grid: { stroke: '#2a3340' } }],
      series: [{}].concat(series.map((s, i) => ({ label: s, stroke: palette[i % palette.length], width: 1.5, spanGaps: false }))),
    };
    return new uPlot(opts, data, el);
  }
  // points counts the non-null values a chart shows, for tests and people.
  function mark(el, data) {
    let n = 0;
    for (let i = 1; i < data.length; i++) for (const v of data[i]) if (v !== null && v !== undefined) n++;
    el.dataset.points = String(n);
  }

  const live = { t: [], rps: [], eps: [], p50: [], p99: [], ttft50: [], ttft99: [] };
  const rateEl = $('chart-rate'), latEl = $('chart-latency');
  const rateChart = chart(rateEl, ['requests/s', 'errors/s'], [[], [], []]);
  const latChart = chart(latEl, ['p50', 'p99', 'ttft p50', 'ttft p99'], [[], [], [], [], []]);
  let prev = null;

  // quantile: PromQL's histogram_quantile on cumulative counts.
  function quantile(q, bounds, cum) {
    const n = cum.length;
    if (!n || cum[n - 1] <= 0) return null;
    const rank = q * cum[n - 1];
    let i = 0;
    while (i < n - 1 && cum[i] < rank) i++;
    if (i >= bounds.length) return i > 0 ? bounds[i - 1] : null; // the +Inf bucket
    const lo = i > 0 ? bounds[i - 1] : 0, below = i > 0 ? cum[i - 1] : 0, inb = cum[i] - below;
    return inb <= 0 ? bounds[i] : lo + (bounds[i] - lo) * (rank - below) / inb;
  }
  function windowQ(q, cur, old) {
    if (!cur.counts.length) return null;
    const d = cur.counts.map((c, i) => c - (old && old.counts.length === cur.counts.length ? old.counts[i] : 0));
    const v = quantile(q, cur.bounds, d);
    return v === null ? null : v * 1000;
  }
  function push(k, v) {
    live[k].push(v);
    if (live[k].length > MAX_POINTS) live[k].shift();
  }

  function showLive(v) {
    setTile('total-requests', num(v.requests.total, 0), v.requests.total);
    setTile('total-errors', num(v.errors.total, 0), v.errors.total);
    setTile('latency', ms(v.latency.p50) + ' / ' + ms(v.latency.p99), v.latency.p50);
    setTile('ttft', ms(v.ttft.p50) + ' / ' + ms(v.ttft.p99), v.ttft.p50);
    setTile('overhead', ms(v.overhead.p50), v.overhead.p50);
    setTile('total-cost', usd(v.money.cost), v.money.cost);
    setTile('total-charge', usd(v.money.charge), v.money.charge);
    setTile('total-savings', usd(v.money.savings), v.money.savings);
    if (prev && v.time > prev.time) {
      const dt = (v.time - prev.time) / 1000;
      const rps = (v.requests.total - prev.requests.total) / dt;
      push('t', v.time / 1000);
      push('rps', rps);
      push('eps', (v.errors.total - prev.errors.total) / dt);
      push('p50', windowQ(0.5, v.latency, prev.latency));
      push('p99', windowQ(0.99, v.latency, prev.latency));
      push('ttft50', windowQ(0.5, v.ttft, prev.ttft));
      push('ttft99', windowQ(0.99, v.ttft, prev.ttft));
      setTile('rate-requests', num(rps, 1), rps);
      const rd = [live.t, live.rps, live.eps], ld = [live.t, live.p50, live.p99, live.ttft50, live.ttft99];
      rateChart.setData(rd);
      latChart.setData(ld);
      mark(rateEl, rd);
      mark(latEl, ld);
    }
    prev = v;

    const c = v.cache.layers;
    table('cache', c, (r) => [r.layer, r.result, num(r.hits, 0), num(r.rate * 100, 1) + ' %']);
    table('models', v.models, (r) => [r.provider || '(a layer answered)', r.model, num(r.responses, 0), num(r.input_tokens, 0) + ' / ' + num(r.output_tokens, 0), usd(r.cost), usd(r.charge), usd(r.savings)]);
    table('health', v.providers, (r) => [r.backend, String(r.status || r.state), num(r.samples, 0), num(r.error_rate * 100, 1) + ' %', r.since ? new Date(r.since).toLocaleTimeString() : '']);
    table('failovers', v.failovers, (r) => [r.provider, r.reason, num(r.count, 0)]);
    table('plugins', v.plugins, (r) => [r.plugin, r.op, num(r.calls, 0), r.calls ? ms(r.mean) : '', r.calls ? ms(r.p99) : '', num(r.failures, 0), num(r.skips, 0)]);
    table('spend', v.accounts, (r) => [r.id, r.kind, usd(r.spend)]);
  }

  async function pollLive() {
    try {
      showLive(await getJSON('/dashboard/api/live'));
      status.textContent = 'updated ' + new Date().toLocaleTimeString();
      status.className = 'muted';
    } catch (e) {
      problem('live figures', e);
    }
    setTimeout(pollLive, LIVE_EVERY);
  }

  // History: money per bucket, and the charge by a dimension.
  const moneyEl = $('chart-money'), byEl = $('chart-breakdown');
  let moneyChart = null, byChart = null, byNames = '', hist = null;
  function showHistory(h) {
    hist = h;
    const note = $('history-note');
    note.hidden = !h.note;
    note.textContent = h.note || '';
    const md = [h.buckets, h.cost, h.charge, h.savings];
    if (!moneyChart) moneyChart = chart(moneyEl, ['cost', 'charge', 'savings'], md);
    else moneyChart.setData(md);
    mark(moneyEl, md);
    moneyEl.dataset.requests = String(h.requests.reduce((a, b) => a + b, 0));
    showBreakdown();
  }
  function showBreakdown() {
    if (!hist) return;
    const b = hist.by[$('dimension').value] || { names: [], charge: [] };
    const data = [hist.buckets].concat(b.charge);
    const names = b.names.join('\u0000');
    if (!byChart || names !== byNames) {
      // The series changed: a new chart (the old one's canvas released).
      if (byChart) byChart.destroy();
      byChart = chart(byEl, b.names, data);
      byNames = names;
    } else {
      byChart.setData(data);
    }
    mark(byEl, data);
    byEl.dataset.series = String(b.names.length);
  }
  async function loadHistory() {
    try {
      showHistory(await getJSON('/dashboard/api/history?range=' + encodeURIComponent($('range').value)));
    } catch (e) {
      problem('history', e);
    }
  }
  $('range').addEventListener('change', loadHistory);
  $('dimension').addEventListener('change', showBreakdown);

  async function loadAccounts() {
    try {
      const a = await getJSON('/dashboard/api/accounts');
      const note = $('accounts-note');
      note.hidden = !a.note && !a.truncated;
      note.textContent = a.note || (a.truncated ? 'the first 500 accounts; the admin API lists the rest' : '');
      table('accounts', a.accounts, (r) => [r.id, r.name, r.tier, usd(r.balance), usd(r.held), usd(r.available),
        r.keys.map((k) => k.id + (k.name ? ' (' + k.name + ')' : '') + (k.state !== 'active' ? ' [' + k.state + ']' : '')).join(', ')]);
    } catch (e) {
      problem('accounts', e);
    }
  }
  function slow() {
    Promise.all([loadHistory(), loadAccounts()]).finally(() => setTimeout(slow, SLOW_EVERY));
  }

  // The feed: a long poll that the server ends within 10 s and the page
  // within 15 s, so a long inference never holds the page.
  const feed = $('feed');
  let since = 0;
  function describe(e) {
    const d = e.data || {};
    switch (e.type) {
      case 'provider:resolved': return 'routed to ' + d.provider + ' / ' + d.model + (d.degraded && d.degraded.length ? ' (degraded: ' + [].concat(d.degraded).join(', ') + ')' : '');
      case 'provider:fallback': return 'provider ' + d.failed + ' failed (' + (d.reason || d.status) + '), next ' + (d.next || '–');
      case 'inference.provider_fallback': return 'failed over: tried ' + [].concat(d.tried || []).join(', ') + ', answered by ' + d.provider;
      case 'inference.cache_hit': return d.cache + ' for ' + d.model + (d.saved_usd ? ', saved $' + d.saved_usd : '');
      case 'inference.end': return 'failed with ' + d.status + ' (' + d.model + ')';
      default: return JSON.stringify(d);
    }
  }
  function addEvent(e) {
    const li = document.createElement('li');
    if (e.type === 'inference.end' || e.type === 'provider:exhausted') li.className = 'failed';
    else if (/fallback|degraded|stale|downgraded/.test(e.type) || (e.data && e.data.degraded && e.data.degraded.length)) li.className = 'degraded';
    li.textContent = new Date(e.time).toLocaleTimeString() + '  ' + e.type + '  ' + describe(e) + (e.account ? '  [' + e.account + ']' : '');
    feed.insertBefore(li, feed.firstChild);
    while (feed.children.length > MAX_FEED) feed.removeChild(feed.lastChild);
    feed.dataset.count = String(feed.children.length);
  }
  async function pollFeed() {
    let delay = 0;
    try {
      const f = await getJSON('/dashboard/api/events?since=' + since + '&wait=' + WAIT, 15000);
      for (const e of f.events) addEvent(e);
      since = f.next;
    } catch (e) {
      problem('feed', e);
      delay = 2000;
    }
    setTimeout(pollFeed, delay);
  }

  window.addEventListener('resize', () => {
    for (const [c, el] of [[rateChart, rateEl], [latChart, latEl], [moneyChart, moneyEl], [byChart, byEl]]) {
      if (c) c.setSize({ width: width(el), height: 220 });
    }
  });

  pollLive();
  slow();
  pollFeed();
})();
