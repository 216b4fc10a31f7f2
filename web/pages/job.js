// Job page (#/job/ID): details and state history, per-GPU utilization and memory over time (one
// line per node:GPU, so multi-node jobs show every node) with CPU and I/O alongside, the log
// following live (refetched from the last offset on `log` events and state changes), the
// advisor's findings, and a Cancel button for the owner and admins.
import { request, getJson, postJson, session, ApiError } from '../lib/api.js';
import { h, fill, fmtNum, fmtTime, fmtDuration, fmtGiB, stateBadge, visible } from '../lib/dom.js';
import { on } from '../lib/live.js';
import { timeChart, alignSeries } from '../lib/chart.js';
import { withNewer, afterRefresh, refreshAfter } from '../lib/history.js';

const TERMINAL = new Set(['SUCCEEDED', 'FAILED', 'CANCELLED']);
const LOG_KEEP = 2 << 20; // characters of log kept on the page (the end of it)
const LOG_SIZE_PROBE = 2 ** 53 - 1; // an offset past any log: the answer is its size alone
const CHART_REFRESH_MS = 10000; // the controller keeps a sample per GPU every 10 s

function dlRows(pairs) {
  return pairs.filter(([, v]) => v !== null && v !== undefined && v !== '')
    .map(([k, v]) => h('div', {}, h('dt', { text: k }), h('dd', {}, v)));
}

function details(j) {
  const gpus = j.gpu_share ? `${j.gpu_share} of one GPU` : `${j.gpus}${j.nodes > 1 ? ` per node × ${j.nodes} nodes` : ''}`;
  const placed = j.node ? `${j.node}${j.gpu_indices && j.gpu_indices.length ? ` (GPU ${j.gpu_indices.join(', ')})` : ''}` : null;
  const limits = [j.cpus ? `${j.cpus} CPUs` : null, j.memory_mib ? `${fmtGiB(j.memory_mib)} GiB memory` : null,
    j.time_limit_s ? `time limit ${fmtDuration(j.time_limit_s)}` : null].filter(Boolean).join(', ');
  const run = j.start_ms ? fmtDuration(((j.end_ms || Date.now()) - j.start_ms) / 1000) : null;
  const u = j.usage;
  return dlRows([
    ['User', j.user],
    ['Name', j.name],
    ['Queue', j.queue || 'default'],
    ['Priority', String(j.priority)],
    ['GPUs', `${gpus}, ${j.gpu_type || 'any model'}`],
    ['Placed on', placed],
    ['Command', j.argv ? h('code', { text: j.argv.join(' ') }) : null],
    ['Working directory', j.workdir],
    ['Limits', limits],
    ['Submitted', fmtTime(j.submit_ms)],
    ['Started', j.start_ms ? fmtTime(j.start_ms) : null],
    ['Ended', j.end_ms ? fmtTime(j.end_ms) : null],
    ['Run time', run],
    ['Predicted run time', j.predicted_runtime_s ? `${fmtDuration(j.predicted_runtime_s)} (${j.prediction_basis || 'estimate'})` : null],
    ['Exit code', j.exit_code === null || j.exit_code === undefined ? null : String(j.exit_code)],
    ['Reason', j.reason],
    ['GPU usage', u ? `mean utilization ${fmtNum(u.gpu_util_avg_pct, 1)} %, peak memory ${fmtGiB(u.gpu_mem_peak_mib)} GiB (its GPUs on one node), ` +
      `${fmtNum(u.gpu_hours_used, 2)} of ${fmtNum(u.gpu_hours_allocated, 2)} GPU-hours used` : null],
    ['Out of memory', j.oom_killed ? 'yes: killed for exceeding its memory limit' : null],
  ]);
}

// The state history table; `olderButton` (or null) heads it when the server holds older events
// than those shown (it sends the latest page only).
function history(events, olderButton) {
  if (!events || events.length === 0) return h('p', { class: 'empty', text: 'No events.' });
  return h('div', { class: 'table-wrap' },
    olderButton ? h('p', { class: 'muted', id: 'history-cut', text: `The latest ${events.length} events; older ones are not shown yet. ` }, olderButton) : null,
    h('table', { class: 'data', id: 'job-history' },
      h('caption', { text: 'State history' }),
      h('thead', {}, h('tr', {}, ['Time', 'What', 'Detail', 'By'].map((t) => h('th', { scope: 'col', text: t })))),
      h('tbody', {}, events.map((e) => h('tr', {},
        h('td', { text: fmtTime(e.time_ms) }), h('td', { text: e.what }),
        h('td', { text: e.detail || '' }), h('td', { text: e.actor || '' }))))));
}

function findings(advice) {
  const list = advice.findings || [];
  if (list.length === 0) return h('p', { class: 'empty', text: advice.note || 'No findings.' });
  return h('ul', { class: 'findings' }, list.map((f) => h('li', { class: `finding sev-${f.severity}` },
    h('p', {}, h('span', { class: `badge sev-${f.severity}`, text: f.severity }), ' ', h('strong', { text: f.summary }),
      f.node ? ` (node ${f.node})` : ''),
    // One paragraph per piece of advice: the API gives a list, which as text would run together
    // ("...GPUs.,If the model...").
    f.advice && f.advice.length ? h('div', { class: 'advice' }, [].concat(f.advice).map((a) => h('p', { text: a }))) : null,
    f.waste_gpu_h > 0 ? h('p', { class: 'muted', text: `Waste: ${fmtNum(f.waste_gpu_h, 2)} GPU-hours` }) : null,
    f.evidence && f.evidence.length ? h('ul', { class: 'evidence' }, f.evidence.map((e) =>
      h('li', { text: `${e.figure}: ${fmtNum(e.value, 2)} ${e.unit || ''}` }))) : null)));
}

export function mount(ctx) {
  const id = ctx.params[0];
  ctx.setTitle(`Job ${id}`);
  let job = null;
  let timer = null;

  const title = h('h1', { text: `Job ${id}` });
  const stateEl = h('p', { class: 'job-state', id: 'job-state', role: 'status', 'aria-live': 'polite' });
  const cancelBtn = h('button', { type: 'button', id: 'cancel-job', class: 'danger', hidden: true, text: 'Cancel job' });
  const actionMsg = h('p', { class: 'notice', role: 'status', hidden: true });
  const errorEl = h('p', { class: 'error', role: 'alert', hidden: true });
  const detailsEl = h('dl', { class: 'details', id: 'job-details' });
  const historyEl = h('div', { id: 'history' });
  // Once older history pages were asked for: every event shown so far (oldest first), joined to
  // the events each refresh asks for after its last; and the event id to ask before next.
  let olderEvents = [];
  let olderBefore = null;
  let shownEvents = []; // what the history table shows now
  function showHistory() {
    fill(historyEl, history(shownEvents, olderBefore ? olderBtn : null));
  }
  const olderBtn = h('button', { type: 'button', id: 'history-older', text: 'Show older events' });
  const charts = {
    util: h('div', { class: 'chart', id: 'chart-util' }),
    mem: h('div', { class: 'chart', id: 'chart-mem' }),
    cpu: h('div', { class: 'chart', id: 'chart-cpu' }),
    io: h('div', { class: 'chart', id: 'chart-io' }),
  };
  const usageNote = h('p', { class: 'muted', hidden: true });
  const adviceEl = h('div', { id: 'advice' }, h('p', { class: 'loading', text: 'Loading…' }));
  const logPre = h('pre', { class: 'log', id: 'job-log', tabindex: '0', 'aria-label': `Output of job ${id}` });
  const logInfo = h('p', { class: 'muted', id: 'log-info' });
  const follow = h('input', { type: 'checkbox', id: 'log-follow', checked: true });

  fill(ctx.main,
    h('p', { class: 'crumbs' }, h('a', { href: '#/jobs', text: 'Jobs' }), ' › ', `Job ${id}`),
    title, stateEl, h('div', { class: 'actions' }, cancelBtn), actionMsg, errorEl,
    h('section', { 'aria-labelledby': 'h-details' }, h('h2', { id: 'h-details', text: 'Details' }), detailsEl),
    h('section', { 'aria-labelledby': 'h-history' }, h('h2', { id: 'h-history', text: 'History' }), historyEl),
    h('section', { 'aria-labelledby': 'h-usage' }, h('h2', { id: 'h-usage', text: 'GPU, CPU and I/O over time' }),
      h('div', { class: 'charts' }, charts.util, charts.mem, charts.cpu, charts.io), usageNote),
    h('section', { 'aria-labelledby': 'h-advice' }, h('h2', { id: 'h-advice', text: 'Advisor' }), adviceEl),
    h('section', { 'aria-labelledby': 'h-log' }, h('h2', { id: 'h-log', text: 'Log' }),
      h('div', { class: 'log-bar' }, h('label', { for: 'log-follow' }, follow, ' Follow the end of the log'), logInfo),
      logPre));

  const utilChart = timeChart(charts.util, { title: 'GPU utilization per GPU', unit: '%', range: [0, 100] });
  const memChart = timeChart(charts.mem, { title: 'GPU memory used per GPU', unit: 'GiB', digits: 1 });
  const cpuChart = timeChart(charts.cpu, { title: 'CPU and memory (per minute)', unit: '%', range: [0, 100] });
  const ioChart = timeChart(charts.io, { title: 'Disk I/O (per minute)', unit: 'MB/s', digits: 1 });

  // The state line is a live region: rewritten only when its words change (each change is read out).
  let lastState = null;
  function showState(state, why) {
    lastState = state;
    if (stateEl.textContent !== visible(`State: ${state}${why}`)) fill(stateEl, 'State: ', stateBadge(state), why);
  }

  function showJob(j, askedAfter = null) {
    job = j;
    title.textContent = visible(j.name ? `Job ${j.id}: ${j.name}` : `Job ${j.id}`);
    ctx.setTitle(`Job ${j.id}`);
    showState(j.state, j.reason && TERMINAL.has(j.state) ? ` (${j.reason})` : '');
    fill(detailsEl, details(j));
    const refreshed = afterRefresh(olderEvents, olderBefore, j, askedAfter);
    if (refreshed) {
      olderEvents = refreshed.loaded;
      olderBefore = refreshed.olderBefore;
      shownEvents = refreshed.shown;
      showHistory();
    }
    const mayCancel = session.admin || j.user === session.user;
    cancelBtn.hidden = !(mayCancel && !TERMINAL.has(j.state));
  }

  olderBtn.addEventListener('click', async () => {
    olderBtn.disabled = true;
    // What is shown now and where it ends, as of the click: a refresh while the page loads may
    // move the latest page on, and the older page joins what was shown when it was asked for.
    const before = olderBefore;
    const base = olderEvents.length > 0 ? olderEvents : shownEvents;
    try {
      const page = await getJson(`/v1/jobs/${id}?events_before=${before}`);
      if (!ctx.alive) return;
      // With what a refresh added meanwhile (nothing while no older page was loaded: then the
      // refresh below adds it).
      olderEvents = withNewer((page.events || []).concat(base), olderEvents);
      olderBefore = page.events_older_before || null;
      shownEvents = olderEvents;
      showHistory();
    } catch (e) {
      errorEl.hidden = false;
      errorEl.textContent = `Could not load older events: ${e.message}`;
    } finally {
      olderBtn.disabled = false;
    }
  });

  // With older pages shown, a refresh asks only for the events after the last one shown, page
  // after page while more follow (a few pages at most; the next refresh goes on from there).
  async function loadJob() {
    let after = refreshAfter(olderEvents);
    let j = await getJson(after === null ? `/v1/jobs/${id}` : `/v1/jobs/${id}?events_after=${after}`);
    if (!ctx.alive) return j;
    showJob(j, after);
    for (let pages = 1; pages < 10 && after !== null && j.events_newer_after; pages++) {
      after = j.events_newer_after;
      j = await getJson(`/v1/jobs/${id}?events_after=${after}`);
      if (!ctx.alive) return j;
      showJob(j, after);
    }
    return j;
  }

  async function loadCharts() {
    const gpus = await getJson(`/v1/jobs/${id}/gpus`);
    if (!ctx.alive) return;
    const series = gpus.series || [];
    const labels = series.map((s) => `${s.node}:${s.index}`);
    utilChart.update(labels, alignSeries(series.map((s) => ({ t: s.t_ms, v: s.util_pct }))));
    memChart.update(labels, alignSeries(series.map((s) => ({ t: s.t_ms, v: s.mem_used_mib.map((m) => (m === null ? null : m / 1024)) }))));
    let usage = null;
    try {
      usage = await getJson(`/v1/jobs/${id}/usage`);
    } catch (e) {
      if (!(e instanceof ApiError) || e.status !== 404) throw e;
    }
    if (!ctx.alive) return;
    const buckets = (usage && usage.buckets) || [];
    usageNote.hidden = buckets.length > 0;
    usageNote.textContent = usage ? '' : 'No CPU and I/O series for this job (it has not run, or ran before series were kept).';
    // Buckets count from the start of the run they measured: the job's start, or, for a job that
    // waits again after a requeue (its start is cleared until it runs), its last run's in its
    // history.
    const lastRunStart = () => {
      const events = (job && job.events) || [];
      for (let i = events.length - 1; i >= 0; --i) {
        if (/->RUNNING$/.test(events[i].what)) return events[i].time_ms;
      }
      return 0;
    };
    const t0 = (job && job.start_ms) || lastRunStart();
    const t = buckets.map((b) => t0 + b.start_s * 1000);
    const pick = (figs) => figs.filter(([key]) => buckets.some((b) => b[key] !== null && b[key] !== undefined));
    const cpuFigs = pick([['cpu_used_pct', 'CPU used'], ['mem_used_pct', 'memory used'], ['cpu_pressure_pct', 'CPU pressure'], ['io_pressure_pct', 'I/O pressure']]);
    cpuChart.update(cpuFigs.map(([, l]) => l), alignSeries(cpuFigs.map(([k]) => ({ t, v: buckets.map((b) => b[k]) }))));
    const ioFigs = pick([['io_mb_s', 'disk I/O']]);
    ioChart.update(ioFigs.map(([, l]) => l), alignSeries(ioFigs.map(([k]) => ({ t, v: buckets.map((b) => b[k]) }))));
  }

  async function loadAdvice() {
    const advice = await getJson(`/v1/jobs/${id}/advice`);
    if (ctx.alive) fill(adviceEl, findings(advice));
  }

  // The log, from the last offset; one fetch at a time, again if asked meanwhile. The first
  // fetch asks only for the size, and the page reads from there back LOG_KEEP bytes: a job can
  // write a gigabyte, and whoever opens its page (an admin, say) would otherwise download it all.
  let logText = '';
  let logOffset = 0;
  let logSkipped = 0; // bytes before the part read
  let logStarted = false;
  let logBusy = false;
  let logAgain = false;
  const decoder = new TextDecoder();
  async function pollLog() {
    if (logBusy) {
      logAgain = true;
      return;
    }
    logBusy = true;
    try {
      if (!logStarted) {
        const probe = await request(`/v1/jobs/${id}/logs?offset=${LOG_SIZE_PROBE}`);
        await probe.arrayBuffer(); // empty; read so that the request ends rather than aborts
        const total = parseInt(probe.headers.get('X-Log-Size') || '0', 10);
        if (!ctx.alive) return;
        logStarted = true;
        logSkipped = Math.max(0, total - LOG_KEEP);
        logOffset = logSkipped;
      }
      for (;;) {
        logAgain = false;
        const res = await request(`/v1/jobs/${id}/logs?offset=${logOffset}`);
        const bytes = new Uint8Array(await res.arrayBuffer());
        const size = parseInt(res.headers.get('X-Log-Size') || '0', 10);
        if (!ctx.alive) return;
        if (bytes.length > 0) {
          logOffset += bytes.length;
          logText += decoder.decode(bytes, { stream: true });
          let note = logSkipped > 0 ? ' (the page shows the last 2 MiB)' : '';
          if (logText.length > LOG_KEEP) {
            logText = logText.slice(logText.length - LOG_KEEP);
            note = ' (the page shows the last 2 MiB)';
          }
          logPre.textContent = visible(logText);
          logInfo.textContent = `${fmtNum(logOffset)} bytes${note}`;
          if (follow.checked) logPre.scrollTop = logPre.scrollHeight;
        } else if (logOffset === 0 && logSkipped === 0) {
          logInfo.textContent = 'No output yet.';
        }
        if (!(logAgain || (bytes.length > 0 && logOffset < size))) break;
      }
    } finally {
      logBusy = false;
    }
  }

  function fail(what, e) {
    if (!ctx.alive) return;
    errorEl.hidden = false;
    errorEl.textContent = `Cannot load ${what}: ${e.message}`;
  }

  function scheduleCharts() {
    clearTimeout(timer);
    if (ctx.alive && job && job.state === 'RUNNING') {
      // The advice follows the usage it is drawn from: both refresh while the job runs.
      timer = setTimeout(() => Promise.all([
        loadCharts().catch((e) => fail('the usage', e)),
        loadAdvice().catch((e) => fail('the advice', e)),
      ]).finally(scheduleCharts), CHART_REFRESH_MS);
    }
  }

  cancelBtn.addEventListener('click', async () => {
    // The name on one short line: it is the job owner's text, and a dialog is a trusted surface.
    const name = job && job.name ? job.name.replace(/[\s\p{Cc}\p{Cf}]+/gu, ' ').slice(0, 60) : '';
    // eslint-disable-next-line no-alert
    if (!window.confirm(`Cancel job ${id}${name ? ` (${name})` : ''}? A running job is stopped.`)) return;
    cancelBtn.disabled = true;
    try {
      const r = await postJson(`/v1/jobs/${id}/cancel`);
      // (Its end may have come live already.)
      if (!TERMINAL.has(lastState) && !TERMINAL.has(r.state)) {
        actionMsg.hidden = false;
        actionMsg.textContent = 'Cancel requested: the job is being stopped.';
      }
    } catch (e) {
      fail('the cancel', e);
    } finally {
      cancelBtn.disabled = false;
    }
  });

  const offs = [
    on('job', (e) => {
      if (String(e.id) !== String(id)) return;
      if (job && e.state) showState(e.state, '');
      if (TERMINAL.has(e.state)) {
        cancelBtn.hidden = true;
        actionMsg.hidden = true;
      }
      loadJob().then((j) => {
        pollLog().catch((err) => fail('the log', err));
        if (TERMINAL.has(j.state) || j.state === 'RUNNING') {
          loadCharts().catch((err) => fail('the usage', err));
          loadAdvice().catch((err) => fail('the advice', err));
        }
        scheduleCharts();
      }).catch((err) => fail('the job', err));
    }),
    on('log', (e) => {
      if (String(e.id) === String(id)) pollLog().catch((err) => fail('the log', err));
    }),
    on('resync', () => {
      loadJob().catch((err) => fail('the job', err));
      pollLog().catch((err) => fail('the log', err));
    }),
  ];

  (async () => {
    try {
      await loadJob();
    } catch (e) {
      fail(`job ${id}`, e);
      ctx.shown();
      return;
    }
    const parts = await Promise.allSettled([loadCharts(), loadAdvice(), pollLog()]);
    ['the usage', 'the advice', 'the log'].forEach((what, i) => {
      if (parts[i].status === 'rejected') fail(what, parts[i].reason);
    });
    scheduleCharts();
    ctx.shown();
  })();

  return {
    unmount() {
      clearTimeout(timer);
      offs.forEach((off) => off());
      utilChart.destroy();
      memChart.destroy();
      cpuChart.destroy();
      ioChart.destroy();
    },
  };
}
