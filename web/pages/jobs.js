// Jobs page (#/jobs?user=&state=&queue=&gpu_type=&sort=&order=&offset=): filters, sortable
// columns and pages of 50, all kept in the hash so that reload and back work. The server filters,
// sorts and pages (X-Total-Count), so 100,000 jobs cost one page of rows. Live: a row's state
// changes in place; the first page is refetched (throttled) when jobs come or go.
import { request, session } from '../lib/api.js';
import { readJobsState, jobsUrl, PAGE_SIZE as LIMIT } from '../lib/jobs_query.js';
import { h, fill, setText, fmtNum, fmtTime, fmtDuration, stateBadge, throttle } from '../lib/dom.js';
import { on } from '../lib/live.js';

const STATES = ['PENDING', 'SCHEDULED', 'RUNNING', 'SUCCEEDED', 'FAILED', 'CANCELLED', 'PREEMPTED', 'LOST'];
// Columns: [label, sort key (null: not sortable), cell(job), class]
const COLUMNS = [
  ['ID', 'id', (j) => h('a', { href: `#/job/${j.id}`, text: String(j.id) }), 'num'],
  ['Name', null, (j) => j.name || '—'],
  ['User', 'user', (j) => j.user],
  ['State', 'state', (j) => stateBadge(j.state)],
  ['Queue', 'queue', (j) => j.queue || 'default'],
  ['GPUs', 'gpus', (j) => (j.gpu_share ? `${j.gpu_share} (share)` : j.nodes > 1 ? `${j.gpus} × ${j.nodes}` : String(j.gpus)), 'num'],
  ['GPU type', null, (j) => j.gpu_type || 'any', 'nowrap'],
  ['Priority', 'priority', (j) => String(j.priority), 'num'],
  ['Submitted', 'submit', (j) => fmtTime(j.submit_ms), 'nowrap'],
  ['Started', 'start', (j) => fmtTime(j.start_ms), 'nowrap'],
  ['Ended', 'end', (j) => fmtTime(j.end_ms), 'nowrap'],
  ['Run time', null, (j) => (j.start_ms ? fmtDuration(((j.end_ms || Date.now()) - j.start_ms) / 1000) : '—'), 'num'],
];
const TEXT_KEYS = new Set(['user', 'state', 'queue']);

function go(state) {
  const q = new URLSearchParams();
  if (session.admin) q.set('user', state.user);
  for (const k of ['state', 'queue', 'gpu_type']) if (state[k]) q.set(k, state[k]);
  q.set('sort', state.sort);
  q.set('order', state.order);
  if (state.offset) q.set('offset', String(state.offset));
  location.hash = `#/jobs?${q}`;
}

export function mount(ctx) {
  ctx.setTitle('Jobs');
  let state = readJobsState(ctx.query, session.admin);
  let rows = new Map(); // id -> { tr, stateCell, job } of the rows on screen
  let loadSeq = 0;

  // Filters.
  const field = (id, label, control) => h('div', { class: 'field' }, h('label', { for: id, text: label }), control);
  const userInput = h('input', { id: 'f-user', name: 'user', type: 'text', autocomplete: 'off', 'aria-describedby': 'f-user-help', spellcheck: 'false' });
  const stateSelect = h('select', { id: 'f-state', name: 'state' },
    h('option', { value: '', text: 'any state' }), STATES.map((s) => h('option', { value: s, text: s })));
  const queueInput = h('input', { id: 'f-queue', name: 'queue', type: 'text', autocomplete: 'off', spellcheck: 'false' });
  const typeInput = h('input', { id: 'f-gpu-type', name: 'gpu_type', type: 'text', autocomplete: 'off', spellcheck: 'false' });
  const form = h('form', { class: 'filters', role: 'search', 'aria-label': 'Filter jobs' },
    session.admin
      ? field('f-user', 'User', userInput)
      : h('p', { class: 'field-note' }, 'Your jobs (', h('strong', { text: session.user }), ')'),
    field('f-state', 'State', stateSelect),
    field('f-queue', 'Queue', queueInput),
    field('f-gpu-type', 'GPU model', typeInput),
    h('div', { class: 'buttons' },
      h('button', { type: 'submit', text: 'Apply filters' }),
      h('a', { href: '#/jobs', class: 'button-link', text: 'Reset' })),
    session.admin ? h('p', { id: 'f-user-help', class: 'help', text: '“*” for every user; empty for your own jobs.' }) : null);
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    go({ ...state, user: userInput.value.trim(), state: stateSelect.value, queue: queueInput.value.trim(), gpu_type: typeInput.value.trim(), offset: 0 });
  });
  stateSelect.addEventListener('change', () => form.requestSubmit());

  // Table with sortable headers (buttons; aria-sort on the sorted column).
  const headRow = h('tr');
  const sortButtons = new Map();
  for (const [label, key, , cls] of COLUMNS) {
    if (!key) {
      headRow.append(h('th', { scope: 'col', class: cls || null, text: label }));
      continue;
    }
    const arrow = h('span', { class: 'arrow', 'aria-hidden': 'true' });
    const button = h('button', { type: 'button', class: 'sort', 'data-sort': key }, label, arrow);
    button.addEventListener('click', () => {
      const order = state.sort === key ? (state.order === 'asc' ? 'desc' : 'asc') : (TEXT_KEYS.has(key) ? 'asc' : 'desc');
      go({ ...state, sort: key, order, offset: 0 });
    });
    const th = h('th', { scope: 'col', class: cls || null }, button);
    sortButtons.set(key, { th, arrow });
    headRow.append(th);
  }
  const body = h('tbody');
  const caption = h('caption', { text: 'Jobs' });
  const table = h('table', { class: 'data jobs', id: 'jobs-table' }, caption, h('thead', {}, headRow), body);
  const count = h('p', { class: 'summary', role: 'status', id: 'jobs-count', text: 'Loading jobs…' });
  const errorEl = h('p', { class: 'error', role: 'alert', hidden: true });
  const prev = h('button', { type: 'button', id: 'page-prev', text: '← Previous 50' });
  const next = h('button', { type: 'button', id: 'page-next', text: 'Next 50 →' });
  const pager = h('nav', { class: 'pager', 'aria-label': 'Pages of jobs' }, prev, next);
  prev.addEventListener('click', () => go({ ...state, offset: Math.max(0, state.offset - LIMIT) }));
  // By the rows shown, not by 50: a page the server cut at 16 MiB (X-Truncated) holds fewer.
  let shownRows = LIMIT;
  next.addEventListener('click', () => go({ ...state, offset: state.offset + shownRows }));
  fill(ctx.main, h('h1', { text: 'Jobs' }), form, count, errorEl, h('div', { class: 'table-wrap' }, table), pager);

  function showControls() {
    userInput.value = state.user;
    stateSelect.value = state.state;
    queueInput.value = state.queue;
    typeInput.value = state.gpu_type;
    for (const [key, { th, arrow }] of sortButtons) {
      if (key === state.sort) {
        th.setAttribute('aria-sort', state.order === 'asc' ? 'ascending' : 'descending');
        arrow.textContent = state.order === 'asc' ? ' ▲' : ' ▼';
      } else {
        th.removeAttribute('aria-sort');
        arrow.textContent = '';
      }
    }
  }

  async function load() {
    const seq = ++loadSeq;
    let jobs;
    let total;
    try {
      const res = await request(jobsUrl(state, session.admin));
      jobs = await res.json();
      total = parseInt(res.headers.get('X-Total-Count') || '', 10);
    } catch (e) {
      if (!ctx.alive || seq !== loadSeq) return;
      errorEl.hidden = false;
      errorEl.textContent = `Cannot load jobs: ${e.message}`;
      return;
    }
    if (!ctx.alive || seq !== loadSeq) return;
    errorEl.hidden = true;
    if (!isFinite(total)) total = state.offset + jobs.length;
    shownRows = Math.max(1, jobs.length);
    const frag = document.createDocumentFragment();
    rows = new Map();
    for (const j of jobs) {
      const tr = h('tr', { 'data-id': j.id });
      let stateCell = null;
      for (const [, key, cell, cls] of COLUMNS) {
        const td = h('td', { class: cls || null }, cell(j));
        if (key === 'state') stateCell = td;
        tr.append(td);
      }
      rows.set(j.id, { tr, stateCell, job: j });
      frag.append(tr);
    }
    if (jobs.length === 0) frag.append(h('tr', {}, h('td', { colspan: String(COLUMNS.length), class: 'empty', text: 'No jobs match.' })));
    fill(body, frag);
    const from = jobs.length ? state.offset + 1 : 0;
    setText(count, `Showing ${fmtNum(from)}–${fmtNum(state.offset + jobs.length)} of ${fmtNum(total)} job${total === 1 ? '' : 's'}`);
    caption.textContent = `Jobs, sorted by ${state.sort} (${state.order === 'asc' ? 'ascending' : 'descending'})`;
    prev.disabled = state.offset === 0;
    next.disabled = state.offset + jobs.length >= total;
    ctx.shown();
  }

  const refresh = throttle(load, 2000);
  const offs = [
    on('job', (e) => {
      const r = rows.get(e.id);
      if (r && e.state) {
        r.job.state = e.state;
        fill(r.stateCell, stateBadge(e.state));
      }
      // Others move in and out of the filter (or the first page): refetch.
      if (!r && state.offset === 0) refresh();
      else if (r && state.state) refresh();
    }),
    on('resync', () => refresh()),
  ];

  showControls();
  load();
  return {
    update(query) {
      state = readJobsState(query, session.admin);
      showControls();
      load();
    },
    unmount() {
      refresh.cancel();
      offs.forEach((off) => off());
    },
  };
}
