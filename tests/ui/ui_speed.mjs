#!/usr/bin/env node
// The dashboard's speed (issue 15): the fleet page with 1,000 GPUs and the jobs page with
// 100,000 jobs must paint and show their data within 1 s. Starts `gpufleet up` (argv[2]) on a
// data directory seeded by build/bench/ui_seed (100,000 ended jobs; $UI_SEED names another
// seeder), with 8 simulated GPUs of its own and 124 fake nodes of 8 GPUs whose heartbeats this
// script posts every 2 s with the admin token (so they stay READY and stream `node` events).
// Each view is loaded RUNS times in a fresh document (the first with the HTTP cache off) and
// timed by the browser: first-contentful-paint and the page's performance mark
// 'gf-data-shown', both from navigation start. Prints the results as JSON; exit 1 when a
// median exceeds the limit ($UI_SPEED_LIMIT_MS, default 1000) or the browser reports a problem,
// 77 when chromium or web/node_modules is missing. With $UI_SCREENSHOT_DIR, saves the first
// screen of each page there (fleet-1000-gpus.png, jobs-100000.png).
//   node tests/ui/ui_speed.mjs build/gpufleet
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import {
  loadPuppeteer, launchBrowser, startUp, tempDataDir, apiOk, until, watchedPage, fail, sleep,
} from './harness.mjs';

const binary = process.argv[2];
const JOBS = Number(process.env.UI_SPEED_JOBS || 100000);
const LIMIT_MS = Number(process.env.UI_SPEED_LIMIT_MS || 1000);
const RUNS = Number(process.env.UI_SPEED_RUNS || 5);
const FAKE_NODES = 124; // + the local node's 8 = 1,000 GPUs
const GPUS_PER_NODE = 8;
const { puppeteer, chromium } = await loadPuppeteer();

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const round = (x) => Math.round(x * 10) / 10;

// Heartbeats of the fake nodes, every 2 s until stopped.
function fakeNodes(server) {
  const epochs = new Array(FAKE_NODES).fill(0);
  let stopped = false;
  let beats = 0;
  let failures = 0;
  const beat = async (i) => {
    const now = Date.now();
    const figures = Array.from({ length: GPUS_PER_NODE }, (_, g) => {
      const util = Math.round(Math.abs(Math.sin(i * 7 + g * 3 + now / 20000)) * 100);
      return { index: g, t: now, util, mem: Math.round(util * 800), memtot: 81920 };
    });
    const body = {
      node: `fake-${String(i).padStart(3, '0')}`, address: '127.0.0.1', node_epoch: epochs[i],
      gpus: GPUS_PER_NODE, gpu_model: 'A100-80GB', simulated: true, cpu_milli: 64000,
      memory_mib: 524288, figures, jobs: [],
    };
    try {
      const res = await fetch(`${server.url}/v1/agent/heartbeat`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${server.token}`, 'Content-Type': 'application/json' },
        body: JSON.stringify(body),
      });
      const reply = await res.json();
      if (res.ok) {
        epochs[i] = reply.node_epoch;
        beats++;
      } else {
        failures++;
        if (failures < 3) console.error(`heartbeat of fake-${i}: ${res.status} ${JSON.stringify(reply)}`);
      }
    } catch (e) {
      failures++;
    }
  };
  const loop = (async () => {
    while (!stopped) {
      const started = Date.now();
      await Promise.all(Array.from({ length: FAKE_NODES }, (_, i) => beat(i)));
      await sleep(Math.max(0, 2000 - (Date.now() - started)));
    }
  })();
  return { stop: async () => { stopped = true; await loop; }, stats: () => ({ beats, failures }) };
}

// Loads `hash` RUNS times in a fresh document; the browser's own timings.
// A signed-in browser: the session cookie, and the CSRF token where the page keeps it (the login's
// answer gives it; the cookie alone reads nothing).
async function signIn(page, cookie) {
  const { csrf, ...jar } = cookie;
  await page.setCookie(jar);
  await page.evaluateOnNewDocument((token) => localStorage.setItem('gpufleet-csrf', token), csrf);
}

async function measure(browser, server, cookie, hash, check, shotName) {
  const runs = [];
  for (let r = 0; r < RUNS; r++) {
    const page = await watchedPage(browser, (kind, url, what) => kind === 'failed' && /\/v1\/events(\?|$)/.test(url) && what === 'net::ERR_ABORTED');
    await signIn(page, cookie);
    await page.setCacheEnabled(r > 0);
    await page.goto(`${server.url}/ui/${hash}`, { waitUntil: 'domcontentloaded' });
    await page.waitForFunction(() => performance.getEntriesByName('gf-data-shown').length > 0
      && performance.getEntriesByName('first-contentful-paint').length > 0, { timeout: 30000 });
    const t = await page.evaluate(() => ({
      fcp: performance.getEntriesByName('first-contentful-paint')[0].startTime,
      shown: performance.getEntriesByName('gf-data-shown')[0].startTime,
      // Where the time went ($UI_SPEED_DETAIL=1): each request's start and end.
      detail: [performance.getEntriesByType('navigation')[0], ...performance.getEntriesByType('resource')]
        .map((e) => `${e.name.replace(/^https?:\/\/[^/]+/, '')} ${Math.round(e.startTime)}-${Math.round(e.responseEnd)}`),
    }));
    if (process.env.UI_SPEED_DETAIL) console.error(`${hash} run ${r}: fcp ${Math.round(t.fcp)} shown ${Math.round(t.shown)}\n  ${t.detail.join('\n  ')}`);
    delete t.detail;
    const checked = await check(page);
    if (r === 0 && shotName && process.env.UI_SCREENSHOT_DIR) {
      fs.mkdirSync(process.env.UI_SCREENSHOT_DIR, { recursive: true });
      await page.screenshot({ path: path.join(process.env.UI_SCREENSHOT_DIR, `${shotName}.png`) });
    }
    if (page.problems.length) fail(`${hash}: browser problems:\n  ${page.problems.join('\n  ')}`);
    runs.push({ cache: r === 0 ? 'cold' : 'warm', fcp_ms: round(t.fcp), data_shown_ms: round(t.shown), ...checked });
    await page.close();
  }
  return {
    runs,
    fcp_ms_median: round(median(runs.map((x) => x.fcp_ms))),
    data_shown_ms_median: round(median(runs.map((x) => x.data_shown_ms))),
    data_shown_ms_max: Math.max(...runs.map((x) => x.data_shown_ms)),
  };
}

let server;
let browser;
let nodes;
let code = 0;
try {
  const dir = tempDataDir();
  const seeder = process.env.UI_SEED || path.join(path.dirname(path.resolve(binary || '.')), 'bench/ui_seed');
  let seeded = 0;
  const seedStart = Date.now();
  if (fs.existsSync(seeder)) {
    execFileSync(seeder, ['--data-dir', dir, '--jobs', String(JOBS)], { stdio: ['ignore', 'ignore', 'inherit'] });
    seeded = JOBS;
  } else {
    // TODO: without the seeder the jobs page is measured on an empty store only.
    console.error(`NOTE: no seeder at ${seeder} (build it: cmake --build build --target ui_seed); the jobs page is measured without 100,000 jobs`);
  }
  const seedS = (Date.now() - seedStart) / 1000;
  server = await startUp(binary, ['--simulated-gpus', String(GPUS_PER_NODE)], dir);
  nodes = fakeNodes(server);
  const fleetGpus = FAKE_NODES * GPUS_PER_NODE + GPUS_PER_NODE;
  await until(`${fleetGpus} GPUs READY in /v1/fleet`, async () => {
    const t = (await apiOk(server, server.token, 'GET', '/v1/fleet')).body.totals;
    return t.gpus === fleetGpus ? true : `${t.gpus} GPUs`;
  }, 30000, 500);
  const total = Number((await apiOk(server, server.token, 'GET', '/v1/jobs?user=*&limit=1&total=1')).headers.get('x-total-count'));
  const login = await fetch(`${server.url}/ui/login`, {
    method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ token: server.token }),
  });
  const sid = /gf_session=([^;]+)/.exec(login.headers.get('set-cookie') || '');
  if (!login.ok || !sid) fail(`POST /ui/login: ${login.status}`);
  const cookie = { name: 'gf_session', value: sid[1], url: server.url, csrf: (await login.json()).csrf };
  browser = await launchBrowser(puppeteer, chromium);

  const fleet = await measure(browser, server, cookie, '#/fleet', async (page) => {
    const tiles = await page.$$eval('li.tile', (l) => l.length);
    if (tiles !== fleetGpus) fail(`#/fleet shows ${tiles} tiles, not ${fleetGpus}`);
    return { tiles };
  }, 'fleet-1000-gpus');
  const jobViews = {};
  for (const hash of ['#/jobs', '#/jobs?user=*&state=FAILED&sort=gpus&order=desc',
    `#/jobs?user=*&sort=submit&order=asc&offset=${Math.max(0, total - 50)}`]) {
    jobViews[hash] = await measure(browser, server, cookie, hash, async (page) => {
      const rows = await page.$$eval('#jobs-table tbody tr[data-id]', (l) => l.length);
      if (total >= 50 && rows !== 50) fail(`${hash} shows ${rows} rows, not 50`);
      return { rows };
    }, hash === '#/jobs' ? 'jobs-100000' : null);
  }
  // Paging through 100,000 jobs: Next and Previous show the API's pages.
  if (total > 100) {
    const page = await watchedPage(browser, (kind, url, what) => kind === 'failed' && /\/v1\/events(\?|$)/.test(url) && what === 'net::ERR_ABORTED');
    await signIn(page, cookie);
    await page.goto(`${server.url}/ui/#/jobs`, { waitUntil: 'domcontentloaded' });
    const ids = () => page.$$eval('#jobs-table tbody tr[data-id]', (trs) => trs.map((tr) => Number(tr.dataset.id)));
    const apiIds = async (offset) => (await apiOk(server, server.token, 'GET', `/v1/jobs?user=*&sort=id&order=desc&offset=${offset}&limit=50`)).body.map((j) => j.id);
    await until('the first page', async () => JSON.stringify(await ids()) === JSON.stringify(await apiIds(0)));
    await page.click('#page-next');
    await until('the second page', async () => JSON.stringify(await ids()) === JSON.stringify(await apiIds(50)));
    if (!(await page.evaluate(() => location.hash.includes('offset=50')))) fail('paging does not reach the hash');
    const count = await page.$eval('#jobs-count', (e) => e.textContent);
    if (!count.includes(`51–100 of ${total.toLocaleString('en-US')}`)) fail(`page 2 says "${count}"`);
    await page.click('#page-prev');
    await until('the first page again', async () => JSON.stringify(await ids()) === JSON.stringify(await apiIds(0)));
    if (page.problems.length) fail(`paging: browser problems:\n  ${page.problems.join('\n  ')}`);
    await page.close();
  }
  const all = [fleet, ...Object.values(jobViews)];
  const pass = all.every((v) => v.fcp_ms_median <= LIMIT_MS && v.data_shown_ms_median <= LIMIT_MS);
  console.log(JSON.stringify({
    limit_ms: LIMIT_MS,
    runs_per_view: RUNS,
    fleet: { gpus: fleetGpus, nodes: FAKE_NODES + 1, ...fleet },
    jobs: { jobs_in_store: total, seeded, seed_s: round(seedS), views: jobViews },
    heartbeats: nodes.stats(),
    pass,
  }, null, 2));
  if (!pass) fail(`a view's median first paint or data shown is over ${LIMIT_MS} ms`);
  console.log('PASS: ui_speed');
} catch (e) {
  code = 1;
  console.error(`FAIL: ${e.message}`);
  if (server) console.error(`--- gpufleet up log (tail) ---\n${server.log().split('\n').slice(-20).join('\n')}`);
} finally {
  if (browser) await browser.close().catch(() => {});
  if (nodes) await nodes.stop();
  if (server) await server.stop();
}
process.exit(code);
