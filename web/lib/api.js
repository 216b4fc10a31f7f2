// The API client: JSON over fetch with the session cookie (same origin); every request carries the
// session's CSRF token in X-CSRF-Token, reads too: the server takes the cookie alone for nothing,
// since browsers send it to every port of the host. The token comes only in the login's answer
// and is kept in this origin's localStorage, which pages on other ports cannot read. A 401 from
// /v1 means the session is gone: the app is told (onUnauthorized) and shows the login form again.

import { visible } from './dom.js';

const CSRF = 'gpufleet-csrf';
function storedCsrf() {
  try {
    return localStorage.getItem(CSRF);
  } catch {
    return null;
  }
}
export const session = { user: null, admin: false, csrf: storedCsrf() };
// Keeps the login's CSRF token for this origin's later page loads (null: forgets it).
export function keepCsrf(csrf) {
  session.csrf = csrf;
  try {
    if (csrf) localStorage.setItem(CSRF, csrf);
    else localStorage.removeItem(CSRF);
  } catch { /* storage off: a reload asks for a login again */ }
}
// The token as stored now: another tab of this origin may have logged in again (ending this
// session) or out since this page loaded.
export function currentCsrf() {
  const stored = storedCsrf();
  if (stored !== null || !session.csrf) session.csrf = stored;
  return session.csrf;
}
function csrfHeaders() {
  const csrf = currentCsrf();
  return csrf ? { 'X-CSRF-Token': csrf } : {};
}

let unauthorized = () => {};
export function onUnauthorized(fn) { unauthorized = fn; }

// Its message may quote what a user sent (a field's value): shown, like all text, with its
// bidirectional formatting characters as their code (dom.js, visible).
export class ApiError extends Error {
  constructor(status, message) {
    super(visible(message));
    this.status = status;
  }
}

// Early answers: app.js asks for the first page's data while it checks the session, and the
// page that then asks for the same URL gets that answer (once) instead of asking again.
const early = new Map();
export function requestEarly(path) {
  if (!early.has(path)) {
    early.set(path, fetch(path, { credentials: 'same-origin', cache: 'no-store', headers: { Accept: 'application/json', ...csrfHeaders() } })
      .catch(() => null));
  }
}

// Whether this browser was signed in when last seen (and as an admin): only then does app.js
// ask early, so that a first visit never sends a request bound to fail.
const HINT = 'gpufleet-signed-in';
export function signedInHint() {
  try {
    return JSON.parse(localStorage.getItem(HINT) || 'null');
  } catch {
    return null;
  }
}
export function setSignedInHint(on) {
  try {
    if (on) localStorage.setItem(HINT, JSON.stringify({ admin: session.admin }));
    else localStorage.removeItem(HINT);
  } catch { /* storage off: no early requests */ }
  if (!on) {
    early.clear();
    keepCsrf(null);
  }
}

// fetch with the app's rules; answers the Response (ok only), else throws ApiError.
export async function request(path, { method = 'GET', body } = {}) {
  const headers = { Accept: 'application/json', ...csrfHeaders() };
  const init = { method, headers, credentials: 'same-origin', cache: 'no-store' };
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  let res = null;
  if (method === 'GET' && early.has(path)) {
    res = await early.get(path);
    early.delete(path);
  }
  try {
    if (!res) res = await fetch(path, init);
  } catch (e) {
    throw new ApiError(0, `cannot reach the server (${e.message})`);
  }
  if (!res.ok) {
    let message = `${res.status} ${res.statusText}`;
    try {
      const j = await res.json();
      if (j && j.error) message = j.error;
    } catch { /* not JSON */ }
    // A 403 for the CSRF token means this page's session is not the browser's any more.
    const csrfRefused = res.status === 403 && message.startsWith('X-CSRF-Token');
    if ((res.status === 401 || csrfRefused) && path.startsWith('/v1/')) unauthorized();
    throw new ApiError(res.status, message);
  }
  return res;
}

export async function getJson(path) {
  return (await request(path)).json();
}

export async function postJson(path, body = {}) {
  return (await request(path, { method: 'POST', body })).json();
}

// Query string from an object, leaving out empty values.
export function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v !== '' && v !== null && v !== undefined) q.set(k, v);
  }
  const s = q.toString();
  return s ? `?${s}` : '';
}
