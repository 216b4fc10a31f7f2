// DOM and formatting helpers shared by every page. Elements are built with createElement and
// textContent only: nothing from the API is ever parsed as markup (no innerHTML), and no style
// attribute is ever written (the CSP forbids them; pages set element.style.x where needed).

// Bidirectional formatting characters (U+061C, U+200E-200F, U+202A-202E, U+2066-2069) would let a
// job name or a log line reorder the text shown after it (a name that seems to be another
// user's): every text and attribute these helpers set shows them as their code, \u202e, as the
// CLI does. Pages that set textContent or an attribute themselves pass the text through it.
const BIDI_CONTROLS = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
export function visible(text) {
  return String(text).replace(BIDI_CONTROLS, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

// h('a', {href: '#/job/1', class: 'x', onclick: fn}, 'text', child, [more]) -> HTMLElement
export function h(tag, props, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(props || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === 'class') el.className = value;
    else if (key === 'text') el.textContent = visible(value);
    else if (key.startsWith('on')) el.addEventListener(key.slice(2), value);
    else if (key === 'style') throw new Error('no style attributes (CSP): set el.style.x instead');
    else el.setAttribute(key, value === true ? '' : visible(value));
  }
  append(el, children);
  return el;
}

export function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : visible(child));
  }
  return el;
}

// Replaces the element's children.
export function fill(el, ...children) {
  el.replaceChildren();
  return append(el, children);
}

// Sets text only when it changed (cheap in-place updates of big pages).
export function setText(el, text) {
  const s = visible(text);
  if (el.textContent !== s) el.textContent = s;
}

export function setClass(el, name) {
  if (el.className !== name) el.className = name;
}

const pad = (n) => String(n).padStart(2, '0');

// Local time as 2024-05-01 13:04:05; '—' for 0/null (not started, not ended).
export function fmtTime(ms) {
  if (!ms) return '—';
  const d = new Date(ms);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ` +
    `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

export function fmtDuration(seconds) {
  if (seconds === null || seconds === undefined || !isFinite(seconds) || seconds < 0) return '—';
  const s = Math.round(seconds);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${pad(s % 60)} s`;
  const hours = Math.floor(s / 3600);
  if (hours < 48) return `${hours} h ${pad(Math.floor((s % 3600) / 60))} min`;
  return `${Math.floor(hours / 24)} d ${hours % 24} h`;
}

// 12,345.6 (en-US grouping) without Intl, whose first use costs tens of milliseconds.
export function fmtNum(value, digits = 0) {
  if (value === null || value === undefined || !isFinite(value)) return '—';
  const [int, frac] = Math.abs(Number(value)).toFixed(digits).split('.');
  const grouped = int.length > 3 ? int.replace(/\B(?=(\d{3})+$)/g, ',') : int;
  const sign = value < 0 && Number(`${int}${frac ? `.${frac}` : ''}`) !== 0 ? '-' : '';
  return `${sign}${grouped}${frac ? `.${frac}` : ''}`;
}

// MiB as GiB with one decimal ("—" when unknown).
export function fmtGiB(mib) {
  if (mib === null || mib === undefined || mib < 0) return '—';
  return fmtNum(mib / 1024, mib >= 10240 ? 0 : 1);
}

// A state name as a badge: the word is the signal, the colour only repeats it.
export function stateBadge(state) {
  return h('span', { class: `state state-${String(state).toLowerCase()}`, text: state });
}

// Calls fn at most once per `ms`, the last call winning (live refetches).
export function throttle(fn, ms) {
  let timer = null;
  let last = 0;
  const run = () => { timer = null; last = Date.now(); fn(); };
  const call = () => {
    if (timer) return;
    timer = setTimeout(run, Math.max(0, last + ms - Date.now()));
  };
  call.cancel = () => { clearTimeout(timer); timer = null; };
  return call;
}
