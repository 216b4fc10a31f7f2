// The app's one EventSource on /v1/events: pages subscribe to `job`, `node` and `log` events (and
// `resync`, sent after a reconnect, when events may have been missed). The connection's state is
// written to the header's aria-live status. EventSource sends no headers: the session's CSRF
// token goes in the query (api.js says why every request needs it).

import { currentCsrf } from './api.js';

const handlers = { job: new Set(), node: new Set(), log: new Set(), resync: new Set() };
let source = null;
let statusEl = null;
let opened = false;
let retryTimer = null;

function status(text, cls) {
  if (!statusEl) return;
  if (statusEl.textContent !== text) statusEl.textContent = text;
  statusEl.className = `live ${cls}`;
}

function dispatch(type, data) {
  for (const fn of handlers[type]) {
    try {
      fn(data);
    } catch (e) {
      console.error(e); // eslint-disable-line no-console
    }
  }
}

export function startLive(el) {
  statusEl = el || statusEl;
  stopLive();
  const csrf = currentCsrf();
  source = new EventSource(`/v1/events${csrf ? `?csrf=${encodeURIComponent(csrf)}` : ''}`);
  status('Connecting…', 'connecting');
  source.addEventListener('open', () => {
    status('Live', 'on');
    if (opened) dispatch('resync', null);
    opened = true;
  });
  source.addEventListener('error', () => {
    if (!source) return;
    if (source.readyState === EventSource.CLOSED) {
      // The browser gave up (e.g. the session ended): try again a little later.
      status('Disconnected: retrying', 'off');
      source.close();
      source = null;
      retryTimer = setTimeout(() => startLive(), 5000);
    } else {
      status('Reconnecting…', 'connecting');
    }
  });
  for (const type of ['job', 'node', 'log']) {
    source.addEventListener(type, (e) => {
      let data;
      try {
        data = JSON.parse(e.data);
      } catch {
        return;
      }
      dispatch(type, data);
    });
  }
}

export function stopLive() {
  clearTimeout(retryTimer);
  retryTimer = null;
  if (source) source.close();
  source = null;
  opened = false;
  status('Offline', 'off');
}

// Subscribes fn to events of `type`; returns the unsubscribe function.
export function on(type, fn) {
  handlers[type].add(fn);
  return () => handlers[type].delete(fn);
}
