// The dashboard's shell: checks the session (the login form when there is none), routes the
// hash (#/fleet, #/queue, #/jobs?..., #/job/ID, #/queues) to page modules loaded on demand, runs
// the header (navigation, live status, logout) and the shared live stream, and marks
// `gf-data-shown` (performance.mark) when a page says its data is on screen.
import {
  session, request, getJson, onUnauthorized, requestEarly, signedInHint, setSignedInHint, keepCsrf,
} from './lib/api.js';
import { readJobsState, jobsUrl } from './lib/jobs_query.js';
import { h, fill } from './lib/dom.js';
import { startLive, stopLive } from './lib/live.js';

// Each page: its path, its navigation link, its module, and the requests it starts with (asked
// early, while the session is checked, when this browser was signed in last time).
const ROUTES = [
  { re: /^\/fleet$/, nav: 'fleet', load: () => import('./pages/fleet.js'), early: () => ['/v1/fleet'] },
  { re: /^\/queue$/, nav: 'queue', load: () => import('./pages/queue.js'), early: () => ['/v1/queue/explain'] },
  {
    re: /^\/jobs$/, nav: 'jobs', load: () => import('./pages/jobs.js'),
    early: (m, query, admin) => [jobsUrl(readJobsState(query, admin), admin)],
  },
  { re: /^\/job\/(\d+)$/, nav: 'jobs', load: () => import('./pages/job.js'), early: (m) => [`/v1/jobs/${m[1]}`] },
  {
    re: /^\/queues$/, nav: 'queues', load: () => import('./pages/queues.js'),
    early: () => ['/v1/queues', '/v1/report?by=user&since=7d'],
  },
];

const main = document.getElementById('main');
const nav = document.getElementById('nav');
const sessionBox = document.getElementById('session');
const liveEl = document.getElementById('live');
let current = null; // the page on screen: { route, path, ctx, instance }
let navigations = 0;
let marks = 0; // body[data-shown] counts marks, so that a test can wait for the next one

function matchRoute(path) {
  for (const r of ROUTES) {
    const m = path.match(r.re);
    if (m) return [r, m];
  }
  return null;
}

function parseHash() {
  const raw = location.hash.startsWith('#/') ? location.hash.slice(1) : '/fleet';
  const q = raw.indexOf('?');
  return {
    path: q < 0 ? raw : raw.slice(0, q),
    query: new URLSearchParams(q < 0 ? '' : raw.slice(q + 1)),
  };
}

// Marks `gf-data-shown` once the page's data has been painted (the frame after it was added).
function markShown(seq) {
  requestAnimationFrame(() => setTimeout(() => {
    if (seq !== navigations) return;
    performance.clearMarks('gf-data-shown');
    performance.mark('gf-data-shown');
    document.body.dataset.shown = String(++marks);
  }, 0));
}

function leave() {
  if (!current) return;
  current.ctx.alive = false;
  if (current.instance && current.instance.unmount) current.instance.unmount();
  current = null;
}

async function route() {
  if (!session.user) return;
  const { path, query } = parseHash();
  const match = matchRoute(path);
  for (const a of nav.querySelectorAll('a')) {
    if (match && a.dataset.nav === match[0].nav) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  // The same page with another query (a filter, a sort, a page of the jobs list): updated in place.
  if (current && match && current.route === match[0] && current.path === path &&
      current.instance && current.instance.update) {
    performance.clearMarks('gf-data-shown');
    delete document.body.dataset.shown;
    current.ctx.query = query;
    current.instance.update(query);
    return false;
  }
  leave();
  performance.clearMarks('gf-data-shown');
  const seq = ++navigations;
  delete document.body.dataset.shown;
  if (!match) {
    document.title = 'Not found · gpufleet';
    fill(main, h('h1', { tabindex: '-1', text: 'Page not found' }),
      h('p', {}, 'No page at ', h('code', { text: location.hash }), '. ', h('a', { href: '#/fleet', text: 'Go to the fleet' }), '.'));
    return;
  }
  const [r, m] = match;
  const mod = await r.load();
  if (seq !== navigations) return; // left while loading
  const ctx = {
    main, params: m.slice(1), query, alive: true,
    shown: () => { if (ctx.alive) markShown(seq); },
    setTitle: (t) => { document.title = `${t} · gpufleet`; },
  };
  fill(main);
  current = { route: r, path, ctx, instance: null };
  current.instance = mod.mount(ctx) || {};
  return true;
}

function showLogin(message) {
  leave();
  stopLive();
  setSignedInHint(false);
  session.user = null;
  nav.hidden = true;
  sessionBox.hidden = true;
  document.title = 'Sign in · gpufleet';
  const input = h('input', {
    id: 'token', name: 'token', type: 'password', autocomplete: 'off', required: true,
    'aria-describedby': 'token-help',
  });
  const error = h('p', { id: 'login-error', class: 'error', role: 'alert' });
  const button = h('button', { type: 'submit', text: 'Sign in' });
  const form = h('form', { class: 'login', id: 'login-form' },
    h('div', { class: 'field' }, h('label', { for: 'token', text: 'API token' }), input),
    h('p', { id: 'token-help', class: 'help', text:
      'Your gpufleet API token: `gpufleet users add NAME` prints a user\'s token once; ' +
      '`gpufleet up` keeps the local admin\'s in the data directory (file "token").' }),
    button, error);
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    button.disabled = true;
    error.textContent = '';
    try {
      const res = await request('/ui/login', { method: 'POST', body: { token: input.value.trim() } });
      const signed = await res.json();
      Object.assign(session, { user: signed.user, admin: signed.admin });
      keepCsrf(signed.csrf);
      input.value = '';
      start();
    } catch (err) {
      error.textContent = err.status === 401 ? 'Unknown token: check it and try again.' : `Sign-in failed: ${err.message}`;
      button.disabled = false;
      input.focus();
    }
  });
  fill(main, h('h1', { text: 'Sign in to gpufleet' }),
    message ? h('p', { class: 'notice', role: 'status', text: message }) : null, form);
  input.focus();
  document.body.dataset.shown = `login-${++marks}`;
}

function start() {
  setSignedInHint(true);
  nav.hidden = false;
  sessionBox.hidden = false;
  fill(document.getElementById('who'), 'Signed in as ', h('strong', { text: session.user }),
    session.admin ? ' (admin)' : '');
  startLive(liveEl);
  route();
}

// Signed out only when the server says so: a failed logout (no network, a standby controller)
// leaves the session live, so the page says that rather than hiding it behind the login form.
document.getElementById('logout').addEventListener('click', async (e) => {
  const button = e.currentTarget;
  button.disabled = true;
  try {
    await request('/ui/logout', { method: 'POST' });
  } catch (err) {
    button.disabled = false;
    fill(document.getElementById('who'), h('span', {
      class: 'error', role: 'alert', id: 'logout-error',
      text: `Sign-out failed, your session is still active: ${err.message}. Try again.`,
    }));
    return;
  }
  button.disabled = false;
  showLogin('You are signed out.');
});

// The skip link moves focus to the content without touching the hash (the router's).
document.getElementById('skip').addEventListener('click', (e) => {
  e.preventDefault();
  main.focus();
});

window.addEventListener('hashchange', async () => {
  // After a navigation to another page, focus goes to its heading (screen readers announce it).
  if (await route()) {
    const h1 = main.querySelector('h1');
    if (h1) {
      h1.tabIndex = -1;
      h1.focus();
    }
  }
});
window.addEventListener('pagehide', () => stopLive());
window.addEventListener('pageshow', (e) => { if (e.persisted && session.user) startLive(liveEl); });
onUnauthorized(() => { if (session.user) showLogin('Your session has ended: sign in again.'); });

(async () => {
  // The first page's module, and its data when we were signed in last time, load while the
  // session is checked.
  const { path, query } = parseHash();
  const first = matchRoute(path);
  if (first) {
    first[0].load().catch(() => {});
    const hint = signedInHint();
    if (hint) first[0].early(first[1], query, !!hint.admin).forEach(requestEarly);
  }
  try {
    // 200 with "user": null (or a 401) when there is no session.
    const s = await getJson('/ui/session');
    if (!s || !s.user) {
      showLogin('');
      return;
    }
    Object.assign(session, s);
    start();
  } catch (e) {
    showLogin(e.status === 401 ? '' : `Cannot reach the server: ${e.message}`);
  }
})();
