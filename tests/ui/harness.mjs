// What the dashboard's browser tests share: finding chromium and puppeteer-core (exit 77, "SKIP:",
// when either is missing), running `gpufleet up` on a temporary data directory and a free
// loopback port, calling its API with a bearer token, and a browser page that records every
// console error, page error, CSP violation and failed or 4xx/5xx request as a problem.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

export const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const WEB = path.join(REPO, 'web');

export function skip(why) {
  console.log(`SKIP: ${why}`);
  process.exit(77);
}

export function fail(why) {
  throw new Error(why);
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// puppeteer-core from web/node_modules and the chromium binary, or a SKIP exit.
export async function loadPuppeteer() {
  const chromium = process.env.CHROMIUM || '/usr/bin/chromium';
  if (!fs.existsSync(chromium)) skip(`no chromium at ${chromium} (set CHROMIUM)`);
  const entry = path.join(WEB, 'node_modules/puppeteer-core/lib/esm/puppeteer/puppeteer-core.js');
  if (!fs.existsSync(entry)) skip('web/node_modules has no puppeteer-core (cd web && npm ci)');
  const mod = await import(pathToFileURL(entry).href);
  return { puppeteer: mod.default, chromium };
}

export async function launchBrowser(puppeteer, chromium) {
  return puppeteer.launch({
    executablePath: chromium,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run',
      '--disable-extensions', '--disable-background-networking'],
  });
}

// A fresh temporary data directory for `gpufleet up`.
export function tempDataDir() {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'gpufleet-ui-'));
}

// `gpufleet up` on loopback, in `dir` (default: a new temporary one), serving web/ from
// $GF_UI_DIR when set (else the copy built in): { url, token, dir, proc, log(), stop() }.
export async function startUp(binary, extraArgs = [], dir = tempDataDir()) {
  if (!binary || !fs.existsSync(binary)) fail(`usage: node ${path.basename(process.argv[1])} PATH/TO/gpufleet (got ${binary})`);
  const logPath = `${dir}.up.log`;
  const out = fs.openSync(logPath, 'w');
  const args = ['up', '--data-dir', dir, '--listen', '127.0.0.1:0', '--stop-grace', '1', ...extraArgs];
  if (process.env.GF_UI_DIR) args.push('--ui-dir', path.resolve(process.env.GF_UI_DIR));
  const proc = spawn(path.resolve(binary), args, { stdio: ['ignore', out, out], detached: false });
  let exited = null;
  proc.on('exit', (code, signal) => { exited = { code, signal }; });
  const log = () => (fs.existsSync(logPath) ? fs.readFileSync(logPath, 'utf8') : '');
  const deadline = Date.now() + 30000;
  while (!fs.existsSync(path.join(dir, 'server'))) {
    if (exited) fail(`gpufleet up exited (${JSON.stringify(exited)}):\n${log()}`);
    if (Date.now() > deadline) fail(`gpufleet up did not start within 30 s:\n${log()}`);
    await sleep(50);
  }
  await sleep(50);
  const url = fs.readFileSync(path.join(dir, 'server'), 'utf8').trim();
  const token = fs.readFileSync(path.join(dir, 'token'), 'utf8').trim();
  const server = {
    url, token, dir, proc, log,
    async stop() {
      if (!exited) {
        proc.kill('SIGTERM');
        for (let i = 0; i < 300 && !exited; i++) await sleep(100);
        if (!exited) proc.kill('SIGKILL');
      }
      if (!process.env.GF_KEEP_TEST_DATA) {
        fs.rmSync(dir, { recursive: true, force: true });
        fs.rmSync(logPath, { force: true });
      }
    },
  };
  return server;
}

// The API with a bearer token: { status, headers, body (parsed JSON when it is) }.
export async function api(server, token, method, pathname, body) {
  const res = await fetch(server.url + pathname, {
    method,
    headers: { Authorization: `Bearer ${token}`, ...(body !== undefined ? { 'Content-Type': 'application/json' } : {}) },
    body: body !== undefined ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  let parsed = text;
  try {
    parsed = JSON.parse(text);
  } catch { /* text */ }
  return { status: res.status, headers: res.headers, body: parsed };
}

// api() that insists on a 2xx answer.
export async function apiOk(server, token, method, pathname, body) {
  const r = await api(server, token, method, pathname, body);
  if (r.status < 200 || r.status > 299) fail(`${method} ${pathname}: ${r.status} ${JSON.stringify(r.body)}`);
  return r;
}

// Polls fn until it returns true (exactly: anything else, a string saying what differs for
// one, is kept as the last answer); fails with `what` and that last answer after `ms`.
export async function until(what, fn, ms = 10000, every = 100) {
  const deadline = Date.now() + ms;
  let last;
  for (;;) {
    try {
      last = await fn();
      if (last === true) return last;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) fail(`timed out after ${ms} ms waiting for ${what} (last: ${last instanceof Error ? last.message : JSON.stringify(last)})`);
    await sleep(every);
  }
}

// A page whose problems (console errors, page errors, CSP violations, failed requests, HTTP
// answers >= 400) are collected in page.problems, except those `allowed(kind, url, status)` takes.
export async function watchedPage(browser, allowed) {
  const page = await browser.newPage();
  page.problems = [];
  page.setDefaultTimeout(15000);
  await page.setViewport({ width: 1400, height: 1000 });
  await page.evaluateOnNewDocument(() => {
    document.addEventListener('securitypolicyviolation', (e) => {
      console.error(`CSP violation: ${e.violatedDirective} ${e.blockedURI}`);
    });
  });
  const add = (what) => page.problems.push(what);
  page.on('console', (m) => {
    if (m.type() !== 'error') return;
    const url = (m.location() && m.location().url) || '';
    const status = Number((/status of (\d+)/.exec(m.text()) || [])[1] || 0);
    if (status && allowed('response', url, status)) return;
    add(`console error: ${m.text()} (${url})`);
  });
  page.on('pageerror', (e) => add(`page error: ${e.message}`));
  page.on('requestfailed', (r) => {
    const why = r.failure() ? r.failure().errorText : '?';
    if (allowed('failed', r.url(), why)) return;
    add(`request failed: ${r.method()} ${r.url()}: ${why}`);
  });
  page.on('response', (r) => {
    if (r.status() >= 400 && !allowed('response', r.url(), r.status())) {
      add(`HTTP ${r.status()} for ${r.request().method()} ${r.url()}`);
    }
  });
  return page;
}
