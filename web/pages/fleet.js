// Fleet page (#/fleet): every node and GPU as a tile, coloured by utilization (background) and
// memory (bar), marked in words and symbols by health (drained, unhealthy, lost node, simulated)
// and labelled with the job holding it. Tiles are built once and updated in place from the
// shared stream's `node` events, so 1,000 GPUs stay cheap; the totals at the top are refetched
// (throttled) while events arrive.
import { getJson } from '../lib/api.js';
import { h, fill, setText, setClass, fmtNum, throttle, visible } from '../lib/dom.js';
import { on } from '../lib/live.js';

const UTIL_LEVELS = [
  { cls: 'u0', max: 5, label: 'idle (under 5 %)' },
  { cls: 'u1', max: 35, label: '5–34 %' },
  { cls: 'u2', max: 65, label: '35–64 %' },
  { cls: 'u3', max: 90, label: '65–89 %' },
  { cls: 'u4', max: Infinity, label: '90 % and over' },
];

// Node names in natural order ("gpu-2" before "gpu-10"), without Intl (slow to start).
function byName(a, b) {
  const x = a.match(/\d+|\D+/g) || [];
  const y = b.match(/\d+|\D+/g) || [];
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    if (x[i] === y[i]) continue;
    if (/^\d/.test(x[i]) && /^\d/.test(y[i]) && Number(x[i]) !== Number(y[i])) return Number(x[i]) - Number(y[i]);
    return x[i] < y[i] ? -1 : 1;
  }
  return x.length - y.length;
}

function utilClass(util) {
  if (util === null || util === undefined || util < 0) return 'unknown';
  return UTIL_LEVELS.find((l) => util < l.max).cls;
}

function memClass(frac) {
  return frac >= 0.95 ? 'm3' : frac >= 0.8 ? 'm2' : frac >= 0.5 ? 'm1' : 'm0';
}

function legend() {
  return h('details', { class: 'legend' },
    h('summary', { text: 'Legend' }),
    h('ul', {},
      UTIL_LEVELS.map((l) => h('li', {}, h('span', { class: `swatch ${l.cls}`, 'aria-hidden': 'true' }), `Utilization ${l.label}`)),
      h('li', {}, h('span', { class: 'swatch unknown', 'aria-hidden': 'true' }), 'No sample yet (shown as “—”)'),
      h('li', { text: 'Bar: GPU memory in use (darker when above 80 %), with GiB used of total' }),
      h('li', { text: '⊘ drained: nothing new is placed on the GPU · ⚠ unhealthy: its agent reports a fault' }),
      h('li', { text: 'LOST: the node missed its lease · SIM: simulated GPUs' }),
      h('li', { text: '“job N” links to the job holding the GPU; “busy”: held by a job you cannot see; “free”: not held' })));
}

// A tile's elements, cloned from one prototype (fast for 1,000 GPUs): few elements, and words
// that read well aloud ("GPU 3, 87 % util, 12.5/80 GiB, job 42").
const PROTO = h('li', { class: 'tile unknown' },
  h('span', { class: 'gpu-id' }),
  h('span', { class: 'util' }),
  h('span', { class: 'mem' }, h('span', { class: 'bar', 'aria-hidden': 'true' }, h('span', { class: 'fill m0' })), ''),
  h('span', { class: 'holder' }),
  h('span', { class: 'mark' }));

function makeTile() {
  const el = PROTO.cloneNode(true);
  const [id, util, mem, holder, mark] = el.children;
  return { el, id, util, bar: mem.firstChild.firstChild, mem: mem.lastChild, holder, mark, job: undefined, title: '' };
}

const gib = (mib) => (mib / 1024).toFixed(mib >= 10240 ? 0 : 1);

function updateTile(t, g) {
  setText(t.id, `GPU ${g.index}`);
  const util = g.util_pct;
  setText(t.util, util === null || util === undefined ? '— util' : `${Math.round(util)} % util`);
  let cls = `tile ${utilClass(util)}`;
  if (g.drained) cls += ' drained';
  if (!g.healthy) cls += ' unhealthy';
  setClass(t.el, cls);
  const total = g.mem_total_mib;
  const used = g.mem_used_mib;
  let width = '0%';
  if (total > 0 && used !== null && used !== undefined) {
    const frac = Math.min(1, Math.max(0, used / total));
    width = `${(frac * 100).toFixed(1)}%`;
    setClass(t.bar, `fill ${memClass(frac)}`);
    setText(t.mem, `${gib(used)}/${gib(total)} GiB`);
  } else {
    setText(t.mem, '— GiB');
  }
  if (t.bar.style.width !== width) t.bar.style.width = width;
  const job = g.job ?? (g.busy ? 'busy' : null);
  if (t.job !== job) {
    t.job = job;
    if (typeof job === 'number') fill(t.holder, h('a', { href: `#/job/${job}`, text: `job ${job}` }));
    else setText(t.holder, job === 'busy' ? 'busy' : 'free');
  }
  setText(t.mark, !g.healthy && g.drained ? '⚠ unhealthy · ⊘ drained' : !g.healthy ? '⚠ unhealthy' : g.drained ? '⊘ drained' : '');
  const title = g.drain_reason ? visible(`drained: ${g.drain_reason}`) : '';
  if (t.title !== title) {
    t.title = title;
    t.el.title = title;
  }
}

export function mount(ctx) {
  ctx.setTitle('Fleet');
  const totals = {
    allocated: h('dd', { 'data-total': 'allocated', text: '…' }),
    used: h('dd', { 'data-total': 'used', text: '…' }),
    queue: h('dd', { 'data-total': 'queue', text: '…' }),
    nodes: h('dd', { 'data-total': 'nodes', text: '…' }),
  };
  const item = (label, dd) => h('div', {}, h('dt', { text: label }), dd);
  const totalsEl = h('dl', { class: 'totals', 'aria-label': 'Fleet totals' },
    item('GPUs allocated', totals.allocated), item('GPUs really used (over 5 % utilization)', totals.used),
    item('Queue', totals.queue), item('Nodes', totals.nodes));
  const errorEl = h('p', { class: 'error', role: 'alert', hidden: true });
  const nodesEl = h('div', { class: 'nodes', 'aria-busy': 'true' }, h('p', { class: 'loading', text: 'Loading the fleet…' }));
  fill(ctx.main, h('h1', { text: 'Fleet' }), totalsEl, legend(), errorEl, nodesEl);

  const nodes = new Map(); // name -> { section, badges, meta, list, tiles[] }
  let firstLoad = true;

  function buildNode(n) {
    const state = h('span', { class: 'badge' });
    const sim = h('span', { class: 'badge sim', text: 'SIM', title: 'simulated GPUs' });
    const meta = h('span', { class: 'meta' });
    const headingId = `node-${nodes.size}`;
    const list = h('ul', { class: 'tiles', 'aria-labelledby': headingId });
    const section = h('section', { class: 'node', 'data-node': n.name },
      h('h2', { id: headingId }, h('span', { class: 'node-name', text: n.name }), ' ', state, ' ', sim, ' ', meta),
      list);
    return { section, state, sim, meta, list, tiles: [] };
  }

  // Applies one node (from /v1/fleet or a `node` event) to its section, creating it if new, in
  // name order ("gpu-2" before "gpu-10").
  function applyNode(n, parent) {
    let e = nodes.get(n.name);
    if (!e) {
      e = buildNode(n);
      nodes.set(n.name, e);
      const into = parent || nodesEl;
      const next = parent ? null : [...into.children].find((c) => c.dataset.node && byName(c.dataset.node, n.name) > 0);
      into.insertBefore(e.section, next || null);
    }
    const st = String(n.state || 'UNKNOWN');
    setText(e.state, st);
    setClass(e.state, `badge state-${st.toLowerCase()}`);
    setClass(e.section, `node node-${st.toLowerCase()}`);
    e.sim.hidden = !n.simulated;
    const gpus = n.gpus || [];
    setText(e.meta, [n.gpu_model || 'unknown model', `${gpus.length} GPU${gpus.length === 1 ? '' : 's'}`, n.group ? `group ${n.group}` : null]
      .filter(Boolean).join(' · '));
    while (e.tiles.length < gpus.length) {
      const t = makeTile();
      e.tiles.push(t);
      e.list.append(t.el);
    }
    while (e.tiles.length > gpus.length) e.tiles.pop().el.remove();
    gpus.forEach((g, i) => updateTile(e.tiles[i], g));
  }

  function showTotals(t) {
    setText(totals.allocated, `${fmtNum(t.gpus_allocated)} of ${fmtNum(t.gpus)}`);
    setText(totals.used, `${fmtNum(t.gpus_busy)} (mean utilization ${fmtNum(t.util_mean_pct)} %)`);
    setText(totals.queue, `${fmtNum(t.waiting)} waiting, ${fmtNum(t.running)} running`);
    setText(totals.nodes, fmtNum(t.nodes));
  }

  async function load() {
    let data;
    try {
      data = await getJson('/v1/fleet');
    } catch (e) {
      if (!ctx.alive) return;
      errorEl.hidden = false;
      errorEl.textContent = `Cannot load the fleet: ${e.message}`;
      return;
    }
    if (!ctx.alive) return;
    errorEl.hidden = true;
    showTotals(data.totals);
    if (firstLoad) {
      // First paint: every section built off-document, then inserted at once.
      const frag = document.createDocumentFragment();
      for (const n of [...data.nodes].sort((a, b) => byName(a.name, b.name))) applyNode(n, frag);
      fill(nodesEl, frag);
      if (data.nodes.length === 0) nodesEl.append(h('p', { class: 'empty', text: 'No nodes have joined yet.' }));
      nodesEl.removeAttribute('aria-busy');
      firstLoad = false;
      ctx.shown();
    } else {
      const seen = new Set();
      for (const n of data.nodes) {
        applyNode(n);
        seen.add(n.name);
      }
      for (const [name, e] of nodes) {
        if (!seen.has(name)) {
          e.section.remove();
          nodes.delete(name);
        }
      }
    }
  }

  const refresh = throttle(load, 5000);
  const offs = [
    on('node', (n) => {
      if (firstLoad || !n || !n.name) return;
      applyNode(n);
      refresh();
    }),
    on('job', () => refresh()),
    on('resync', () => refresh()),
  ];
  load();
  return {
    unmount() {
      refresh.cancel();
      offs.forEach((off) => off());
    },
  };
}
