#!/usr/bin/env node
// The dashboard in a real browser (issue 15): starts `gpufleet up` (argv[2]) on simulated GPUs,
// adds a non-admin user and jobs (running, waiting, finished), then in headless chromium logs in
// through the form, loads every page and checks what it shows against the API (the same
// endpoint fetched here with the bearer token), sorts, filters and pages the jobs list, follows a
// log live, cancels a job from its page and sees the state change live, sees a submitted job and
// a fleet tile change without a reload, checks what a non-admin sees, keyboard use, labels and
// WCAG AA contrast, and fails on any console error, page error, CSP violation or failed request
// (beyond the expected ones, listed in `allowed`). Screenshots of every page go to
// $UI_SCREENSHOT_DIR when set. Exit 0: pass; 1: fail; 77: skipped (no chromium/node_modules).
//   node tests/ui/ui_test.mjs build/gpufleet        (GF_UI_DIR=web: serve web/ from the tree)
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  loadPuppeteer, launchBrowser, startUp, api, apiOk, until, watchedPage, fail, sleep,
} from './harness.mjs';

const binary = process.argv[2];
const shotDir = process.env.UI_SCREENSHOT_DIR;
const { puppeteer, chromium } = await loadPuppeteer();

// Problems the test expects: [kind ('response'|'failed'), url regexp, status or error text].
const allowed = [
  ['failed', /\/v1\/events(\?|$)/, 'net::ERR_ABORTED'], // the stream, when the page reloads or logs out
];
const isAllowed = (kind, url, what) => allowed.some(([k, re, w]) => k === kind && re.test(url) && w === what);

let server;
let browser;
let page;
const steps = [];
function step(name) {
  steps.push(name);
  console.log(`- ${name}`);
}
function checkProblems() {
  if (page && page.problems.length) fail(`browser problems during "${steps[steps.length - 1]}":\n  ${page.problems.join('\n  ')}`);
}

// ---- page helpers -------------------------------------------------------------------------
const shown = () => page.evaluate(() => document.body.dataset.shown || '');
async function waitShown(before) {
  await page.waitForFunction((b) => {
    const s = document.body.dataset.shown;
    return s && s !== b && !s.startsWith('login') && performance.getEntriesByName('gf-data-shown').length > 0;
  }, {}, before);
}
async function goHash(hash) {
  const before = await shown();
  await page.evaluate((h) => { location.hash = h; }, hash);
  await waitShown(before);
}
async function clickAndWait(selector) {
  const before = await shown();
  await page.click(selector);
  await waitShown(before);
}
const text = (sel) => page.$eval(sel, (e) => e.textContent);
const texts = (sel) => page.$$eval(sel, (els) => els.map((e) => e.textContent.trim()));
async function shot(name) {
  if (!shotDir) return;
  fs.mkdirSync(shotDir, { recursive: true });
  await page.screenshot({ path: path.join(shotDir, `${name}.png`), fullPage: true });
}
const num = (n) => Number(n).toLocaleString('en-US');

// WCAG AA contrast of every visible text on the page (against its composited background).
function contrastIssues() {
  const parse = (c) => {
    const m = /rgba?\(([^)]+)\)/.exec(c);
    if (!m) return null;
    const p = m[1].split(/[\s,/]+/).filter(Boolean).map(Number);
    return { r: p[0], g: p[1], b: p[2], a: p.length > 3 ? p[3] : 1 };
  };
  const blend = (c, u) => ({ r: c.r * c.a + u.r * (1 - c.a), g: c.g * c.a + u.g * (1 - c.a), b: c.b * c.a + u.b * (1 - c.a), a: 1 });
  const lum = ({ r, g, b }) => {
    const f = (v) => { const x = v / 255; return x <= 0.03928 ? x / 12.92 : ((x + 0.055) / 1.055) ** 2.4; };
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
  };
  const background = (el) => {
    const layers = [];
    for (let e = el; e; e = e.parentElement) {
      const c = parse(getComputedStyle(e).backgroundColor);
      if (c && c.a > 0) {
        layers.push(c);
        if (c.a >= 1) break;
      }
    }
    let base = { r: 255, g: 255, b: 255, a: 1 };
    for (const c of layers.reverse()) base = blend(c, base);
    return base;
  };
  const issues = [];
  for (const el of document.querySelectorAll('body *')) {
    const own = [...el.childNodes].filter((n) => n.nodeType === 3).map((n) => n.textContent).join('').trim();
    if (!own || el.closest('.sr-only,[hidden],script,noscript') || el.matches(':disabled')) continue;
    const st = getComputedStyle(el);
    if (st.visibility === 'hidden' || el.getClientRects().length === 0) continue;
    const bg = background(el);
    const fg = blend(parse(st.color), bg);
    const l1 = lum(fg);
    const l2 = lum(bg);
    const ratio = (Math.max(l1, l2) + 0.05) / (Math.min(l1, l2) + 0.05);
    const size = parseFloat(st.fontSize);
    const need = size >= 24 || (Number(st.fontWeight) >= 700 && size >= 18.66) ? 3 : 4.5;
    if (ratio < need) issues.push(`<${el.tagName.toLowerCase()} class="${el.className}"> "${own.slice(0, 30)}": ${ratio.toFixed(2)}:1 < ${need}:1`);
  }
  return issues;
}

// Landmarks, labels of every control, names of every button.
function a11yIssues() {
  const issues = [];
  if (document.querySelectorAll('main').length !== 1) issues.push('not exactly one <main>');
  if (!document.querySelector('header')) issues.push('no <header>');
  if (!document.querySelector('nav[aria-label]')) issues.push('no labelled <nav>');
  if (!document.querySelector('a.skip-link')) issues.push('no skip link');
  for (const c of document.querySelectorAll('input, select, textarea')) {
    if (c.type === 'hidden') continue;
    if (!(c.labels && c.labels.length) && !c.getAttribute('aria-label') && !c.getAttribute('aria-labelledby')) issues.push(`unlabelled control #${c.id || c.name}`);
  }
  for (const b of document.querySelectorAll('button, a[href]')) {
    if (!(b.textContent.trim() || b.getAttribute('aria-label'))) issues.push(`nameless ${b.tagName} ${b.outerHTML.slice(0, 60)}`);
  }
  const h1s = [...document.querySelectorAll('main h1')];
  if (h1s.length !== 1) issues.push(`${h1s.length} <h1> in main`);
  return issues;
}

async function checkPageQuality(name) {
  const contrast = await page.evaluate(contrastIssues);
  if (contrast.length) fail(`${name}: text below WCAG AA contrast:\n  ${contrast.slice(0, 15).join('\n  ')}`);
  const a11y = await page.evaluate(a11yIssues);
  if (a11y.length) fail(`${name}: accessibility: ${a11y.join('; ')}`);
  checkProblems();
}

async function login(token, who) {
  await page.waitForSelector('#login-form #token');
  await page.click('#token', { clickCount: 3 });
  await page.type('#token', token);
  const before = await shown();
  await page.click('#login-form button[type="submit"]');
  await waitShown(before);
  const whoText = await text('#who');
  if (!whoText.includes(who)) fail(`after login the header says "${whoText}", not ${who}`);
}

async function logout() {
  await page.click('#logout');
  await page.waitForSelector('#login-form #token');
}

// ---- the test ------------------------------------------------------------------------------
async function main() {
  const account = os.userInfo().username;
  const extra = ['--simulated-gpus', '4', '--run-as-map', `alice=${account}`];
  if (process.getuid && process.getuid() === 0) extra.push('--allow-root-jobs');
  server = await startUp(binary, extra);
  const admin = server.token;
  const A = (m, p, b) => apiOk(server, admin, m, p, b);

  step('set up: a non-admin user and jobs (finished, running, waiting)');
  const users = (await A('GET', '/v1/users')).body;
  const adminName = users.find((u) => u.admin).name;
  const alice = (await A('POST', '/v1/users', { name: 'alice' })).body.token;
  const B = (m, p, b) => apiOk(server, alice, m, p, b);
  const submit = async (as, job) => (await as('POST', '/v1/jobs', job)).body.id;
  const stateOf = async (id) => (await A('GET', `/v1/jobs/${id}`)).body.state;
  const j5 = await submit(A, { argv: ['sh', '-c', 'echo finished-ui'], gpus: 1, name: 'done-ui' });
  await until(`job ${j5} to succeed`, async () => (await stateOf(j5)) === 'SUCCEEDED', 20000);
  // A finished job with a 9 MB log, for the job page's log (it reads the last 2 MiB only).
  const big = await submit(A, { argv: ['sh', '-c', "head -c 9000000 /dev/zero | tr '\\0' x; echo; echo END-OF-LOG"], gpus: 1, name: 'long-log' });
  await until(`job ${big} to succeed`, async () => ((await stateOf(big)) === 'SUCCEEDED' ? true : await stateOf(big)), 30000);
  const j1 = await submit(A, {
    argv: ['sh', '-c', 'echo hello-ui; i=0; while true; do i=$((i+1)); echo tick $i; sleep 1; done'],
    gpus: 2, name: 'ticker-ui',
  });
  const j2 = await submit(B, { argv: ['sleep', '600'], gpus: 1, name: 'alice-run', queue: 'team' });
  await until(`jobs ${j1} and ${j2} to run`, async () => (await stateOf(j1)) === 'RUNNING' && (await stateOf(j2)) === 'RUNNING', 20000);
  const j3 = await submit(A, { argv: ['sleep', '600'], gpus: 4, name: 'big-ui' });
  const j4 = await submit(B, { argv: ['sleep', '600'], gpus: 2, name: 'alice-wait', queue: 'team' });
  await sleep(1500); // a few GPU samples of the running jobs

  browser = await launchBrowser(puppeteer, chromium);
  page = await watchedPage(browser, isAllowed);
  page.on('dialog', (d) => d.accept());

  step('the login form, headers and the skip link');
  allowed.push(['response', /\/ui\/session$/, 401]); // the first visit: no session yet
  const first = await page.goto(`${server.url}/ui/`, { waitUntil: 'domcontentloaded' });
  const h = first.headers();
  for (const want of ["script-src 'self'", "style-src 'self'", "default-src 'none'"]) {
    if (!(h['content-security-policy'] || '').includes(want)) fail(`/ui/ has no CSP ${want}: ${h['content-security-policy']}`);
  }
  if (h['x-content-type-options'] !== 'nosniff') fail('/ui/ lacks X-Content-Type-Options: nosniff');
  await page.waitForSelector('#login-form #token');
  const html = await (await fetch(`${server.url}/ui/`)).text();
  if (/<style|style=|<script(?![^>]*\bsrc=)/i.test(html)) fail('index.html has inline style or script');
  await shot('login');
  // A wrong token is refused with a message, and no session.
  allowed.push(['response', /\/ui\/login$/, 401]);
  await page.type('#token', 'not-a-token');
  await page.click('#login-form button[type="submit"]');
  await page.waitForFunction(() => document.querySelector('#login-error').textContent.length > 0);
  allowed.pop();
  checkProblems();

  step('log in as the admin through the form: the fleet page');
  await login(admin, adminName);
  allowed.splice(allowed.findIndex(([, re]) => String(re).includes('session')), 1);
  // Keyboard: Shift+Tab from the first nav link reaches the skip link, Enter moves focus to main.
  await page.focus('#nav a[data-nav="fleet"]');
  await page.keyboard.down('Shift');
  await page.keyboard.press('Tab');
  await page.keyboard.up('Shift');
  if ((await page.evaluate(() => document.activeElement.id)) !== 'skip') fail('Shift+Tab from the navigation does not reach the skip link');
  await page.keyboard.press('Tab');
  const outline = await page.evaluate(() => { const s = getComputedStyle(document.activeElement); return `${s.outlineStyle} ${s.outlineWidth}`; });
  if (outline.startsWith('none') || parseFloat(outline.split(' ')[1]) < 2) fail(`a focused link shows no visible focus (outline ${outline})`);
  await page.keyboard.down('Shift');
  await page.keyboard.press('Tab');
  await page.keyboard.up('Shift');
  await page.keyboard.press('Enter');
  if ((await page.evaluate(() => document.activeElement.id)) !== 'main') fail('the skip link does not move focus to <main>');

  step('fleet: tiles, totals and job labels match /v1/fleet');
  const fleet = (await A('GET', '/v1/fleet')).body;
  const gpuCount = fleet.nodes.reduce((s, n) => s + n.gpus.length, 0);
  const tiles = await page.$$eval('.tiles > li.tile', (els) => els.length);
  if (tiles !== gpuCount) fail(`fleet shows ${tiles} GPU tiles, the API has ${gpuCount}`);
  for (const n of fleet.nodes) {
    const names = await texts('.node .node-name');
    if (!names.includes(n.name)) fail(`fleet misses node ${n.name}`);
    if (n.simulated && !(await page.$(`.node[data-node="${n.name}"] .badge.sim:not([hidden])`))) fail(`node ${n.name} is simulated but not marked`);
  }
  await until('the fleet totals to match the API', async () => {
    const t = (await A('GET', '/v1/fleet')).body.totals;
    const got = await texts('.totals dd');
    return got[0] === `${num(t.gpus_allocated)} of ${num(t.gpus)}` && got[2] === `${num(t.waiting)} waiting, ${num(t.running)} running` ? true : got.join(' | ');
  });
  const j1Tiles = await page.$$eval(`.tile a[href="#/job/${j1}"]`, (els) => els.length);
  if (j1Tiles !== 2) fail(`job ${j1} holds 2 GPUs; the fleet labels ${j1Tiles} tiles with it`);
  await shot('fleet');
  await checkPageQuality('fleet');
  // Every colour the pages can use, whether or not this fleet shows it now: util levels, health
  // marks, a lost node, every state and severity badge, buttons.
  await page.evaluate(() => {
    const el = (tag, cls, text) => { const e = document.createElement(tag); e.className = cls; if (text) e.textContent = text; return e; };
    const fixture = el('div', 'palette-fixture');
    for (const nodeCls of ['node node-ready', 'node node-lost']) {
      const section = el('section', nodeCls);
      const list = el('ul', 'tiles');
      for (const cls of ['u0', 'u1', 'u2', 'u3', 'u4', 'unknown', 'u2 drained', 'u4 unhealthy']) {
        const li = el('li', `tile ${cls}`);
        li.append(el('span', 'gpu-id', 'GPU 0'), el('span', 'util', '50 % util'), el('span', 'holder', 'busy'), el('span', 'mark', '⊘ drained'));
        list.append(li);
      }
      section.append(list);
      fixture.append(section);
    }
    for (const s of ['pending', 'scheduled', 'running', 'succeeded', 'failed', 'cancelled', 'preempted', 'lost', 'ready', 'unknown']) fixture.append(el('span', `state state-${s}`, s));
    for (const s of ['info', 'low', 'warning', 'medium', 'high', 'critical']) fixture.append(el('span', `badge sev-${s}`, s));
    fixture.append(el('span', 'badge sim', 'SIM'), el('button', 'danger', 'Cancel'), el('button', '', 'Apply'), el('a', 'button-link', 'Reset'),
      el('p', 'error', 'error'), el('p', 'notice', 'notice'), el('p', 'muted', 'muted'));
    document.querySelector('main').append(fixture);
  });
  const paletteIssues = await page.evaluate(contrastIssues);
  await page.evaluate(() => document.querySelector('.palette-fixture').remove());
  if (paletteIssues.length) fail(`the palette has pairs below WCAG AA:\n  ${paletteIssues.join('\n  ')}`);

  step('queue (reached with the keyboard): order, ids and reasons match /v1/queue/explain');
  await page.focus('#nav a[data-nav="queue"]');
  let before = await shown();
  await page.keyboard.press('Enter');
  await waitShown(before);
  await until('the queue rows to match the API', async () => {
    const q = (await A('GET', '/v1/queue/explain')).body.jobs;
    const rows = await page.$$eval('#queue-table tbody tr[data-id]', (trs) => trs.map((tr) => [...tr.cells].map((c) => c.textContent.trim())));
    const want = q.map((j) => [String(j.position), String(j.id), j.reason]);
    const got = rows.map((r) => [r[0], r[1], r[7].slice(0, (want.find((w) => w[1] === r[1]) || ['', '', ''])[2].length)]);
    return JSON.stringify(got) === JSON.stringify(want) && q.length >= 2 ? true : JSON.stringify({ got, want });
  });
  await shot('queue');
  await checkPageQuality('queue');

  step('jobs: rows and total match /v1/jobs; sort, filter, back, reload');
  await clickAndWait('#nav a[data-nav="jobs"]');
  const listQuery = (q) => `/v1/jobs?user=*&${q}&limit=50&total=1`;
  async function rowsMatch(q, what) {
    await until(`the jobs rows to match ${what}`, async () => {
      const r = await A('GET', listQuery(q));
      const ids = r.body.map((j) => String(j.id));
      const got = await page.$$eval('#jobs-table tbody tr[data-id]', (trs) => trs.map((tr) => tr.dataset.id));
      const count = await text('#jobs-count');
      return JSON.stringify(ids) === JSON.stringify(got) && count.includes(`of ${num(r.headers.get('x-total-count'))} job`)
        ? true : `${got} vs ${ids}; ${count} vs ${r.headers.get('x-total-count')}`;
    });
  }
  await rowsMatch('sort=id&order=desc', 'id desc');
  await clickAndWait('button[data-sort="gpus"]');
  if (!(await page.evaluate(() => location.hash)).includes('sort=gpus')) fail('sorting does not reach the hash');
  if ((await page.$eval('button[data-sort="gpus"]', (b) => b.parentElement.getAttribute('aria-sort'))) !== 'descending') fail('the sorted column has no aria-sort');
  await rowsMatch('sort=gpus&order=desc', 'gpus desc');
  await clickAndWait('button[data-sort="gpus"]');
  await rowsMatch('sort=gpus&order=asc', 'gpus asc');
  before = await shown();
  await page.select('#f-state', 'RUNNING');
  await waitShown(before);
  await rowsMatch('state=RUNNING&sort=gpus&order=asc', 'state RUNNING');
  const states = await texts('#jobs-table tbody td .state');
  if (states.some((s) => s !== 'RUNNING')) fail(`filtered by RUNNING, the list shows ${states}`);
  before = await shown();
  await page.evaluate(() => history.back());
  await waitShown(before);
  if ((await page.$eval('#f-state', (s) => s.value)) !== '') fail('back does not restore the unfiltered list');
  await rowsMatch('sort=gpus&order=asc', 'gpus asc after back');
  await page.reload({ waitUntil: 'domcontentloaded' });
  await waitShown('');
  await rowsMatch('sort=gpus&order=asc', 'gpus asc after reload');
  await goHash('#/jobs');
  await rowsMatch('sort=id&order=desc', 'id desc');
  // The admin's user filter: one user's jobs.
  await page.click('#f-user', { clickCount: 3 });
  await page.type('#f-user', 'alice');
  before = await shown();
  await page.click('.filters button[type="submit"]');
  await waitShown(before);
  const listed = await page.$$eval('#jobs-table tbody tr[data-id]', (trs) => trs.map((tr) => tr.cells[2].textContent));
  if (listed.length < 2 || listed.some((u) => u !== 'alice')) fail(`filtered by user alice, the list shows ${listed}`);
  await until("alice's rows to match the API", async () => {
    const ids = (await A('GET', '/v1/jobs?user=alice&sort=id&order=desc&limit=50')).body.map((j) => String(j.id));
    const got = await page.$$eval('#jobs-table tbody tr[data-id]', (trs) => trs.map((tr) => tr.dataset.id));
    return JSON.stringify(ids) === JSON.stringify(got) ? true : `${got} vs ${ids}`;
  });
  await goHash('#/jobs');

  step('jobs: a job submitted through the API appears without a reload');
  await page.evaluate(() => { window.noReload = true; });
  // Its name holds a right-to-left override, which would make the text after it read backwards:
  // the page shows the character's code instead.
  const j6 = await submit(A, { argv: ['sleep', '600'], gpus: 1, name: 'live-ui\u202e4pm.exe' });
  await page.waitForSelector(`#jobs-table tr[data-id="${j6}"]`, { timeout: 10000 });
  const liveName = await page.$eval(`#jobs-table tr[data-id="${j6}"]`, (tr) => tr.cells[1].textContent);
  if (liveName !== 'live-ui\\u202e4pm.exe') fail(`a bidi override in a job name is shown as ${JSON.stringify(liveName)}`);
  if (!(await page.evaluate(() => window.noReload))) fail('the page reloaded');
  await shot('jobs');
  await checkPageQuality('jobs');

  step('queues and users: /v1/queues and /v1/report?by=user');
  await clickAndWait('#nav a[data-nav="queues"]');
  await until('the queues table to match the API', async () => {
    const q = (await A('GET', '/v1/queues')).body.queues;
    const got = await page.$$eval('#queues-table tbody tr', (trs) => trs.map((tr) => [tr.dataset.queue, tr.cells[3].textContent.trim()]));
    const want = q.map((x) => [x.name, `${num(x.gpus_allocated)} of`]);
    return want.length > 0 && got.length === want.length && want.every((w, i) => got[i][0] === w[0] && got[i][1].startsWith(w[1])) ? true : JSON.stringify({ got, want });
  });
  const report = (await A('GET', '/v1/report?by=user&since=7d')).body;
  const userRows = await page.$$eval('#users-table tbody tr', (trs) => trs.map((tr) => [tr.dataset.user, tr.cells[2].textContent.trim()]));
  if (JSON.stringify(userRows.map((r) => r[0])) !== JSON.stringify(report.ranking.map((r) => r.name))) fail(`users table ${JSON.stringify(userRows)} vs report ${JSON.stringify(report.ranking)}`);
  report.ranking.forEach((r, i) => {
    if (!userRows[i][1].endsWith(r.gpu_h_alloc.toFixed(2))) fail(`user ${r.name}: ${userRows[i][1]} GPU-h shown, ${r.gpu_h_alloc} in the report`);
  });
  await shot('queues');
  await checkPageQuality('queues');

  step('a logout that fails says the session is still active, and keeps it');
  await page.setRequestInterception(true);
  const failLogout = (r) => (r.url().endsWith('/ui/logout') ? r.abort('connectionfailed') : r.continue());
  page.on('request', failLogout);
  allowed.push(['failed', /\/ui\/logout$/, 'net::ERR_CONNECTION_FAILED']);
  await page.click('#logout');
  await page.waitForSelector('#logout-error');
  if (await page.$('#login-form')) fail('a failed logout showed the sign-in form');
  const still = await page.evaluate(async () => (await (await fetch('/ui/session', { cache: 'no-store', headers: { 'X-CSRF-Token': localStorage.getItem('gpufleet-csrf') } })).json()).user);
  if (still !== adminName) fail(`after a failed logout /ui/session says ${still}`);
  page.off('request', failLogout);
  await page.setRequestInterception(false);
  allowed.pop();
  // The browser logs the request this step made fail, as it should.
  page.problems = page.problems.filter((p) => !/ERR_CONNECTION_FAILED \(http:[^)]*\/ui\/logout\)$/.test(p));
  checkProblems();

  step('a non-admin (alice) sees only her own jobs');
  await logout();
  await login(alice, 'alice');
  await clickAndWait('#nav a[data-nav="fleet"]');
  await until("alice's fleet to label only her jobs", async () => {
    const links = await page.$$eval('.tile a[href^="#/job/"]', (as) => as.map((a) => a.getAttribute('href').slice(6)));
    const busy = (await texts('.tile .holder')).filter((t) => t === 'busy').length;
    const f = (await apiOk(server, alice, 'GET', '/v1/fleet')).body.nodes.flatMap((n) => n.gpus);
    const othersBusy = f.filter((g) => g.busy && g.job === null).length;
    const ok = links.length === 1 && links[0] === String(j2) && busy === othersBusy && othersBusy >= 2;
    return ok ? true : `links ${links} busy ${busy} (API: ${othersBusy} held by others)`;
  });
  await shot('fleet-user');
  await clickAndWait('#nav a[data-nav="jobs"]');
  if (await page.$('#f-user')) fail('a non-admin gets the user filter');
  const mine = await apiOk(server, alice, 'GET', '/v1/jobs?sort=id&order=desc&limit=50&total=1');
  await until("alice's jobs list to match hers", async () => {
    const got = await page.$$eval('#jobs-table tbody tr[data-id]', (trs) => trs.map((tr) => [tr.dataset.id, tr.cells[2].textContent]));
    return JSON.stringify(got.map((g) => g[0])) === JSON.stringify(mine.body.map((j) => String(j.id))) && got.every((g) => g[1] === 'alice') ? true : JSON.stringify(got);
  });
  await shot('jobs-user');
  await clickAndWait('#nav a[data-nav="queue"]');
  const hidden = await page.$$eval('#queue-table tbody tr', (trs) => trs.map((tr) => tr.cells[1].textContent.trim()));
  if (hidden.includes(String(j3)) || !hidden.includes(String(j4)) || !hidden.includes('hidden')) fail(`alice's queue shows ${hidden}`);
  allowed.push(['response', new RegExp(`/v1/jobs/${j1}(/|$)`), 404], ['response', new RegExp(`/v1/jobs/${j1}(/|$)`), 403]);
  await goHash(`#/job/${j1}`);
  if (!(await page.$eval('.error', (e) => !e.hidden && /cannot load/i.test(e.textContent)))) fail("alice sees admin's job page");
  allowed.splice(-2, 2);
  checkProblems();
  await logout();
  await login(admin, adminName);

  step('job page: details, history, charts, advice and the log match the API');
  await clickAndWait('#nav a[data-nav="jobs"]');
  const usage = await api(server, admin, 'GET', `/v1/jobs/${j1}/usage`);
  if (usage.status === 404) allowed.push(['response', new RegExp(`/v1/jobs/${j1}/usage$`), 404]);
  else if (usage.status !== 200) fail(`/v1/jobs/${j1}/usage: ${usage.status}`);
  await clickAndWait(`#jobs-table a[href="#/job/${j1}"]`);
  const job = (await A('GET', `/v1/jobs/${j1}`)).body;
  if (!(await text('main h1')).includes(`Job ${j1}: ticker-ui`)) fail(`job page title: ${await text('main h1')}`);
  if (!(await text('#job-state')).includes(job.state)) fail(`job page state: ${await text('#job-state')} vs ${job.state}`);
  const det = await text('#job-details');
  for (const want of [adminName, job.argv.join(' '), job.queue || 'default']) if (!det.includes(want)) fail(`job details lack "${want}": ${det}`);
  await until('the history to match the events', async () => {
    const ev = (await A('GET', `/v1/jobs/${j1}`)).body.events;
    const rows = await texts('#job-history tbody tr td:nth-child(2)');
    return JSON.stringify(rows) === JSON.stringify(ev.map((e) => e.what)) ? true : `${rows} vs ${ev.map((e) => e.what)}`;
  });
  // The charts refetch every 10 s while the job runs: the API's series show up by then.
  await until("the utilization chart to show the API's series", async () => {
    const series = (await A('GET', `/v1/jobs/${j1}/gpus`)).body.series;
    const summary = await text('#chart-util');
    const missing = series.filter((x) => !summary.includes(`${x.node}:${x.index}`));
    const plotted = await page.$('#chart-util canvas');
    return series.length > 0 && missing.length === 0 && plotted ? true : `${series.length} series; the chart says "${summary}"`;
  }, 25000, 500);
  // A running job's findings change as its samples come in; the page refreshes them with the
  // charts (every 10 s), so the two agree within one refresh.
  await until('the advice to match the API', async () => {
    const advice = (await A('GET', `/v1/jobs/${j1}/advice`)).body;
    const findings = await page.$$eval('#advice li.finding', (l) => l.length);
    if (findings !== advice.findings.length) return `${findings} findings shown, ${advice.findings.length} in the API`;
    // Each piece of advice is a paragraph of its own, word for word as the API has it.
    const shown = await page.$$eval('#advice li.finding', (l) => l.map((li) => [...li.querySelectorAll('.advice p')].map((p) => p.textContent)));
    const want = advice.findings.map((f) => f.advice || []);
    return JSON.stringify(shown) === JSON.stringify(want) ? true : `advice shown ${JSON.stringify(shown)}, in the API ${JSON.stringify(want)}`;
  }, 25000, 500);
  await page.waitForFunction(() => document.querySelector('#job-log').textContent.includes('hello-ui'), { timeout: 10000 });
  const ticks = () => page.$eval('#job-log', (e) => Math.max(0, ...[...e.textContent.matchAll(/tick (\d+)/g)].map((m) => Number(m[1]))));
  const t0 = await ticks();
  await until('the log to follow live', async () => (await ticks()) >= t0 + 2, 15000);
  await shot('job');
  await checkPageQuality('job');

  step('job page: cancel from the Cancel button, the state turns CANCELLED live');
  await page.evaluate(() => { window.noReload = true; });
  await page.click('#cancel-job');
  await page.waitForFunction(() => document.querySelector('#job-state').textContent.includes('CANCELLED'), { timeout: 20000 });
  if ((await stateOf(j1)) !== 'CANCELLED') fail(`job ${j1} is ${await stateOf(j1)} after the cancel`);
  await until('the Cancel button to go', () => page.evaluate(() => document.querySelector('#cancel-job').hidden));
  if (!(await page.evaluate(() => window.noReload))) fail('the page reloaded');
  await until('the history to show the cancel', async () => (await texts('#job-history tbody tr td:nth-child(2)')).length
    === (await A('GET', `/v1/jobs/${j1}`)).body.events.length);
  await shot('job-cancelled');
  checkProblems();

  step('job page: a long log is read from its last 2 MiB, not downloaded whole');
  let logRequests = 0;
  const countLogs = (r) => { if (r.url().includes(`/v1/jobs/${big}/logs`)) logRequests += 1; };
  page.on('request', countLogs);
  await page.evaluate((id) => { window.location.hash = `#/job/${id}`; }, big);
  await page.waitForFunction(() => document.querySelector('#job-log').textContent.includes('END-OF-LOG'), { timeout: 15000 });
  page.off('request', countLogs);
  const shownLog = await page.$eval('#job-log', (e) => e.textContent.length);
  if (shownLog > (2 << 20)) fail(`the page holds ${shownLog} characters of log`);
  // Its size, then its last 2 MiB in one answer (reading it all takes 3 answers of 4 MiB).
  if (logRequests > 2) fail(`${logRequests} log requests for a 9 MB log (its size, then its tail)`);
  if (!(await text('#log-info')).includes('last 2 MiB')) fail(`log info: ${await text('#log-info')}`);
  checkProblems();

  step('fleet: a tile changes live when a job ends');
  await clickAndWait('#nav a[data-nav="fleet"]');
  await page.evaluate(() => { window.noReload = true; });
  await page.waitForSelector(`.tile a[href="#/job/${j2}"]`);
  await A('POST', `/v1/jobs/${j2}/cancel`);
  await page.waitForFunction((id) => !document.querySelector(`.tile a[href="#/job/${id}"]`), { timeout: 15000 }, j2);
  if (!(await page.evaluate(() => window.noReload))) fail('the page reloaded');
  checkProblems();
  console.log('PASS: ui_test');
}

let code = 0;
try {
  await main();
} catch (e) {
  code = 1;
  console.error(`FAIL: ${e.message}`);
  if (page) {
    try {
      await shot('failure');
      console.error(`page: ${await page.evaluate(() => location.href)}`);
    } catch { /* the page is gone */ }
  }
  if (server) console.error(`--- gpufleet up log (tail) ---\n${server.log().split('\n').slice(-30).join('\n')}`);
} finally {
  if (browser) await browser.close().catch(() => {});
  if (server) {
    // Jobs outlive `up`: cancel what is left before stopping it.
    try {
      const left = (await api(server, server.token, 'GET', '/v1/jobs?user=*&limit=10000')).body;
      for (const j of Array.isArray(left) ? left : []) {
        if (!['SUCCEEDED', 'FAILED', 'CANCELLED'].includes(j.state)) await api(server, server.token, 'POST', `/v1/jobs/${j.id}/cancel`);
      }
      await sleep(1500);
    } catch { /* the server is gone */ }
    await server.stop();
  }
}
process.exit(code);
