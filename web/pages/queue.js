// Queue page (#/queue): the pending jobs in the scheduler's order (/v1/queue/explain), each with
// why it waits; refetched (throttled) when any job changes state.
import { getJson } from '../lib/api.js';
import { h, fill, setText, fmtNum, fmtDuration, throttle } from '../lib/dom.js';
import { on } from '../lib/live.js';

function row(j) {
  const id = j.id === null || j.id === undefined
    ? h('span', { class: 'muted', text: 'hidden' })
    : h('a', { href: `#/job/${j.id}`, text: String(j.id) });
  const gpus = j.nodes > 1 ? `${j.gpus} × ${j.nodes} nodes` : String(j.gpus);
  let reason = j.reason || '';
  if (j.fits_after_s > 0) reason += ` (expected to fit in about ${fmtDuration(j.fits_after_s)})`;
  return h('tr', { 'data-id': j.id ?? '' },
    h('td', { class: 'num', text: String(j.position) }),
    h('td', {}, id),
    h('td', { text: j.name ?? '—' }),
    h('td', { text: j.user ?? '—' }),
    h('td', { text: j.queue || 'default' }),
    h('td', { class: 'num', text: gpus }),
    h('td', { text: j.kind || '' }),
    h('td', { class: 'reason', text: reason }));
}

export function mount(ctx) {
  ctx.setTitle('Queue');
  const summary = h('p', { class: 'summary', role: 'status' }, 'Loading the queue…');
  const errorEl = h('p', { class: 'error', role: 'alert', hidden: true });
  const body = h('tbody');
  const table = h('table', { class: 'data', id: 'queue-table' },
    h('caption', { text: 'Pending jobs in the order the scheduler considers them' }),
    h('thead', {}, h('tr', {}, [['Position', 'num'], ['Job'], ['Name'], ['User'], ['Queue'], ['GPUs', 'num'], ['Kind'], ['Why it waits']]
      .map(([t, cls]) => h('th', { scope: 'col', class: cls || null, text: t })))),
    body);
  fill(ctx.main, h('h1', { text: 'Queue' }), summary, errorEl, h('div', { class: 'table-wrap' }, table));
  let first = true;

  async function load() {
    let data;
    try {
      data = await getJson('/v1/queue/explain');
    } catch (e) {
      if (!ctx.alive) return;
      errorEl.hidden = false;
      errorEl.textContent = `Cannot load the queue: ${e.message}`;
      return;
    }
    if (!ctx.alive) return;
    errorEl.hidden = true;
    const jobs = data.jobs || [];
    const waiting = data.waiting ?? jobs.length;
    // A status region: its text is replaced only when it changes (each change is read out).
    setText(summary, `${fmtNum(waiting)} job${waiting === 1 ? '' : 's'} waiting` +
      (data.policy ? ` · policy ${data.policy}` : '') + (data.truncated ? ` · showing the first ${fmtNum(jobs.length)}` : ''));
    const frag = document.createDocumentFragment();
    for (const j of jobs) frag.append(row(j));
    if (jobs.length === 0) frag.append(h('tr', {}, h('td', { colspan: '8', class: 'empty', text: 'Nothing is waiting.' })));
    fill(body, frag);
    if (first) {
      first = false;
      ctx.shown();
    }
  }

  const refresh = throttle(load, 2000);
  const offs = [on('job', () => refresh()), on('resync', () => refresh())];
  load();
  return {
    unmount() {
      refresh.cancel();
      offs.forEach((off) => off());
    },
  };
}
