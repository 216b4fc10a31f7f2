// Time-series charts with uPlot: one chart per figure (GPU utilization, GPU memory, CPU, I/O),
// one line per series. Each chart is a labelled image to assistive technology, with a text
// summary (mean and peak of every series) printed under it, so no reading depends on the plot.
import uPlot from '/ui/vendor/uPlot.esm.js';
import { h, fill, fmtNum, visible } from './dom.js';

// Line colours, each at least 3:1 against the white plot area; dashes tell series 5-12 apart
// from series 1-4 without colour.
const COLORS = ['#1f5fbf', '#b3261e', '#1b7a3a', '#8a4baf', '#a35200', '#0b7285', '#5c5c5c', '#b0007a'];
const DASHES = [[], [6, 3], [2, 3], [8, 3, 2, 3]];

// Aligns per-series samples [{label, t: [ms], v: [value]}] on one time axis (seconds).
export function alignSeries(list) {
  if (list.length === 0) return [[]];
  const tables = list.map((s) => [s.t.map((ms) => Math.round(ms / 1000)), s.v.map((v) => (v === null || v < 0 ? null : v))]);
  // Timestamps must be strictly increasing for uPlot.join: keep the last value of a second.
  for (const t of tables) {
    const xs = [];
    const ys = [];
    for (let i = 0; i < t[0].length; i++) {
      if (xs.length && xs[xs.length - 1] >= t[0][i]) {
        if (xs[xs.length - 1] === t[0][i]) ys[ys.length - 1] = t[1][i];
        continue;
      }
      xs.push(t[0][i]);
      ys.push(t[1][i]);
    }
    t[0] = xs;
    t[1] = ys;
  }
  return tables.length === 1 ? tables[0] : uPlot.join(tables);
}

const two = (n) => String(n).padStart(2, '0');
// Time axis labels: HH:MM, with seconds when the ticks are closer than a minute.
function timeLabels(u, splits, axisIdx, space, incr) {
  return splits.map((s) => {
    const d = new Date(s * 1000);
    return `${two(d.getHours())}:${two(d.getMinutes())}${incr < 60 ? `:${two(d.getSeconds())}` : ''}`;
  });
}

// The x range: the data's, widened to at least a minute (uPlot's own guess for one sample of a
// time scale in seconds spans 1,000 days).
function xRange(u, min, max) {
  const xs = u.data[0];
  if (!xs || xs.length === 0) return [min, max];
  const lo = xs[0];
  const hi = xs[xs.length - 1];
  return hi - lo < 60 ? [lo - 30, hi + 30] : [lo, hi];
}

function summary(labels, data, unit, digits) {
  const parts = labels.map((label, i) => {
    const vs = data[i + 1].filter((v) => v !== null && v !== undefined);
    if (vs.length === 0) return `${label}: no samples`;
    const mean = vs.reduce((a, b) => a + b, 0) / vs.length;
    return `${label}: mean ${fmtNum(mean, digits)} ${unit}, peak ${fmtNum(Math.max(...vs), digits)} ${unit}`;
  });
  return parts.join('; ');
}

// uPlot's stylesheet, added to the document on the first chart (no other page needs it).
function loadCss() {
  if (document.getElementById('uplot-css')) return;
  document.head.append(h('link', { id: 'uplot-css', rel: 'stylesheet', href: '/ui/vendor/uPlot.min.css' }));
}

// A chart in `container` (an element of the page); update(labels, data) redraws it.
export function timeChart(container, { title, unit, digits = 0, range = null }) {
  loadCss();
  const plotEl = h('div', { class: 'chart-plot', role: 'img' });
  const summaryEl = h('p', { class: 'chart-summary' });
  const emptyEl = h('p', { class: 'empty', text: 'No samples.', hidden: true });
  fill(container, h('h3', { text: title }), plotEl, emptyEl, summaryEl);
  let plot = null;
  let labels = [];

  function width() {
    return Math.max(280, (container.clientWidth || 600) - 4);
  }

  function build(newLabels, data) {
    if (plot) plot.destroy();
    labels = newLabels;
    plot = new uPlot({
      width: width(),
      height: 200,
      // One sample (or one minute) still gets a minute of axis around it.
      scales: { x: { time: true, range: xRange },
        y: range ? { range } : { auto: true } },
      axes: [
        { stroke: '#1b1f24', grid: { stroke: '#e3e6ea' }, space: 70, values: timeLabels },
        { stroke: '#1b1f24', grid: { stroke: '#e3e6ea' }, label: unit, size: 56 },
      ],
      series: [
        { label: 'time' },
        ...labels.map((label, i) => ({
          label: visible(label),
          stroke: COLORS[i % COLORS.length],
          dash: DASHES[Math.floor(i / COLORS.length) % DASHES.length],
          width: 1.5,
          spanGaps: true,
          value: (u, v) => (v === null || v === undefined ? '—' : `${fmtNum(v, digits)} ${unit}`),
        })),
      ],
    }, data, plotEl);
  }

  function update(newLabels, data) {
    const empty = newLabels.length === 0 || data[0].length === 0;
    emptyEl.hidden = !empty;
    plotEl.hidden = empty;
    if (empty) {
      summaryEl.textContent = '';
      return;
    }
    if (!plot || newLabels.join('\n') !== labels.join('\n')) build(newLabels, data);
    else plot.setData(data);
    const text = summary(newLabels, data, unit, digits);
    summaryEl.textContent = visible(text);
    plotEl.setAttribute('aria-label', visible(`${title}. ${text}`));
  }

  const resize = new ResizeObserver(() => {
    if (plot && Math.abs(plot.width - width()) > 8) plot.setSize({ width: width(), height: 200 });
  });
  resize.observe(container);

  return {
    update,
    destroy() {
      resize.disconnect();
      if (plot) plot.destroy();
      plot = null;
    },
  };
}
