// Queues and users page (#/queues): each queue's fair share against its quota (/v1/queues; a bar
// and the numbers), and GPU-hours allocated and really used per user over the last 7 days
// (/v1/report?by=user). Refetched (throttled) when jobs change state.
import { getJson } from '../lib/api.js';
import { h, fill, fmtNum, throttle } from '../lib/dom.js';
import { on } from '../lib/live.js';

// A bar of `value` against `max` (the numbers are always printed beside it).
function bar(value, max, over) {
  const frac = max > 0 ? Math.min(1, value / max) : 0;
  const fillEl = h('span', { class: `fill${over ? ' over' : ''}` });
  fillEl.style.width = `${(frac * 100).toFixed(1)}%`;
  return h('span', { class: 'hbar', 'aria-hidden': 'true' }, fillEl);
}

function queuesTable(data) {
  const queues = data.queues || [];
  if (queues.length === 0) return h('p', { class: 'empty', text: 'No queues yet (a queue appears with its first job).' });
  return h('div', { class: 'table-wrap' }, h('table', { class: 'data', id: 'queues-table' },
    h('caption', { text: `Fair share per queue (${fmtNum(data.gpus)} GPUs in the fleet)` }),
    h('thead', {}, h('tr', {}, [['Queue'], ['Weight', 'num'], ['Share', 'num'], ['GPUs allocated against quota'], ['Running', 'num'], ['Waiting', 'num']]
      .map(([t, cls]) => h('th', { scope: 'col', class: cls || null, text: t })))),
    h('tbody', {}, queues.map((q) => {
      const over = q.gpus_allocated > q.quota_gpus;
      const pct = q.quota_gpus > 0 ? (100 * q.gpus_allocated) / q.quota_gpus : null;
      return h('tr', { 'data-queue': q.name },
        h('th', { scope: 'row', text: q.name }),
        h('td', { class: 'num', text: fmtNum(q.weight, q.weight % 1 ? 2 : 0) }),
        h('td', { class: 'num', text: `${fmtNum(q.share_pct, 1)} %` }),
        h('td', { class: 'barcell' }, bar(q.gpus_allocated, Math.max(q.quota_gpus, q.gpus_allocated), over),
          h('span', { class: 'barnum', text: `${fmtNum(q.gpus_allocated)} of ${fmtNum(q.quota_gpus, q.quota_gpus % 1 ? 1 : 0)}` +
            (pct === null ? '' : ` (${fmtNum(pct)} % of quota${over ? ', over' : ''})`) })),
        h('td', { class: 'num', text: fmtNum(q.running) }),
        h('td', { class: 'num', text: fmtNum(q.waiting) }));
    }))));
}

function usersTable(report) {
  const rows = report.ranking || [];
  if (rows.length === 0) return h('p', { class: 'empty', text: 'No finished or running jobs in this period.' });
  const max = Math.max(...rows.map((r) => r.gpu_h_alloc), 0);
  return h('div', { class: 'table-wrap' }, h('table', { class: 'data', id: 'users-table' },
    h('caption', { text: `GPU-hours per user, last ${fmtNum((report.since_s || 604800) / 86400, 0)} days (${report.scope || 'fleet'})` }),
    h('thead', {}, h('tr', {}, [['User'], ['Jobs', 'num'], ['GPU-hours allocated'], ['GPU-hours used', 'num'], ['Used of allocated'], ['Waste (GPU-h)', 'num']]
      .map(([t, cls]) => h('th', { scope: 'col', class: cls || null, text: t })))),
    h('tbody', {}, rows.map((r) => h('tr', { 'data-user': r.name },
      h('th', { scope: 'row', text: r.name }),
      h('td', { class: 'num', text: fmtNum(r.jobs) }),
      h('td', { class: 'barcell' }, bar(r.gpu_h_alloc, max, false), h('span', { class: 'barnum', text: fmtNum(r.gpu_h_alloc, 2) })),
      h('td', { class: 'num', text: fmtNum(r.gpu_h_used, 2) }),
      h('td', { class: 'barcell' }, bar(r.used_pct, 100, false), h('span', { class: 'barnum', text: `${fmtNum(r.used_pct, 1)} %` })),
      h('td', { class: 'num', text: fmtNum(r.waste_gpu_h, 2) }))))));
}

export function mount(ctx) {
  ctx.setTitle('Queues and users');
  const queuesEl = h('div', { id: 'queues' }, h('p', { class: 'loading', text: 'Loading…' }));
  const usersEl = h('div', { id: 'users' }, h('p', { class: 'loading', text: 'Loading…' }));
  const errorEl = h('p', { class: 'error', role: 'alert', hidden: true });
  fill(ctx.main, h('h1', { text: 'Queues and users' }), errorEl,
    h('section', { 'aria-labelledby': 'h-queues' }, h('h2', { id: 'h-queues', text: 'Queues: fair-share usage against quota' }), queuesEl),
    h('section', { 'aria-labelledby': 'h-users' }, h('h2', { id: 'h-users', text: 'Users: GPU-hours allocated and used' }), usersEl));
  let first = true;

  async function load() {
    const [q, r] = await Promise.allSettled([getJson('/v1/queues'), getJson('/v1/report?by=user&since=7d')]);
    if (!ctx.alive) return;
    const errors = [];
    if (q.status === 'fulfilled') fill(queuesEl, queuesTable(q.value));
    else errors.push(`queues: ${q.reason.message}`);
    if (r.status === 'fulfilled') fill(usersEl, usersTable(r.value));
    else errors.push(`report: ${r.reason.message}`);
    errorEl.hidden = errors.length === 0;
    errorEl.textContent = errors.length ? `Cannot load ${errors.join('; ')}` : '';
    if (first) {
      first = false;
      ctx.shown();
    }
  }

  const refresh = throttle(load, 3000);
  const offs = [on('job', () => refresh()), on('resync', () => refresh())];
  load();
  return {
    unmount() {
      refresh.cancel();
      offs.forEach((off) => off());
    },
  };
}
