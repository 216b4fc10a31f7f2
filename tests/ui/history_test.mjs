// The job page's history merge (web/lib/history.js), under node alone: what the page shows after
// refreshes and "Show older events" pages. Run: node --test tests/ui/history_test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { withNewer, afterRefresh, refreshAfter } from '../../web/lib/history.js';

const ev = (from, to) => Array.from({ length: to - from + 1 }, (_, i) => ({ id: from + i }));
const ids = (events) => events.map((e) => e.id);

test('without older pages a refresh shows its latest page and where older ones start', () => {
  const r = afterRefresh([], null, { events: ev(11, 20), events_older_before: 11 });
  assert.deepEqual(ids(r.shown), ids(ev(11, 20)));
  assert.deepEqual(r.loaded, []);
  assert.equal(r.olderBefore, 11);
  assert.equal(afterRefresh([], null, { events: ev(1, 5) }).olderBefore, null);
});

test('once older pages are loaded a refresh adds only what is newer, and keeps the older cursor', () => {
  const loaded = ev(1, 20); // older page 1..10 joined to the latest page 11..20
  const r = afterRefresh(loaded, null, { events: ev(13, 22), events_older_before: 13 });
  assert.deepEqual(ids(r.shown), ids(ev(1, 22)));
  assert.deepEqual(ids(r.loaded), ids(ev(1, 22)));
  assert.equal(r.olderBefore, null);
  const partway = afterRefresh(ev(6, 20), 6, { events: ev(15, 24), events_older_before: 15 });
  assert.equal(partway.olderBefore, 6);
  assert.deepEqual(ids(partway.shown), ids(ev(6, 24)));
});

// Before: the refresh's page (31..40) was appended to 1..20, and 21..30 were never shown.
test('more than a page since the last refresh starts again from the latest page, with no gap', () => {
  const r = afterRefresh(ev(1, 20), null, { events: ev(31, 40), events_older_before: 31 });
  assert.deepEqual(ids(r.shown), ids(ev(31, 40)));
  assert.deepEqual(r.loaded, []);
  assert.equal(r.olderBefore, 31, 'the button asks for the events before the latest page again');
});

test('withNewer never repeats an event', () => {
  assert.deepEqual(ids(withNewer(ev(1, 5), ev(3, 8))), ids(ev(1, 8)));
  assert.deepEqual(ids(withNewer([], ev(3, 4))), [3, 4]);
});

// Before events_after, a refresh asked for the latest page and could not tell exactly one page
// since the last refresh from more, so it started again from the latest page.
test('with older pages shown a refresh asks after the last one shown and joins every event', () => {
  assert.equal(refreshAfter([]), null, 'none loaded: the latest page');
  const loaded = ev(1, 20);
  assert.equal(refreshAfter(loaded), 20);
  const r = afterRefresh(loaded, 1, { events: ev(21, 30), events_newer_after: 30 }, 20);
  assert.deepEqual(ids(r.shown), ids(ev(1, 30)));
  assert.deepEqual(ids(r.loaded), ids(ev(1, 30)));
  assert.equal(r.olderBefore, 1, 'the older cursor stays');
  assert.equal(r.newerAfter, 30, 'more follow: the next page is asked after 30');
  const next = afterRefresh(r.loaded, 1, { events: ev(31, 35) }, 30);
  assert.deepEqual(ids(next.shown), ids(ev(1, 35)));
  assert.equal(next.newerAfter, null);
  const quiet = afterRefresh(next.loaded, 1, { events: [] }, 35);
  assert.deepEqual(ids(quiet.shown), ids(ev(1, 35)));
});

test('an answer after an event no longer loaded changes nothing', () => {
  assert.equal(afterRefresh([], null, { events: ev(21, 30) }, 20), null);
  assert.equal(afterRefresh(ev(1, 10), null, { events: ev(21, 30) }, 20), null);
});
