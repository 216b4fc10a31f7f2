// The job page's state history across refreshes and "Show older events" pages. Pure: no DOM, no
// fetch (tests/ui/history_test.mjs runs it under node). Events are oldest first; ids only grow.

// `events` followed by those of `more` that are newer than its last.
export function withNewer(events, more) {
  const last = events.length > 0 ? events[events.length - 1].id : 0;
  return events.concat(more.filter((e) => e.id > last));
}

// The event id a refresh asks the events after (`events_after`), given what is `loaded`: its
// last, once older pages were asked for; null (ask for the latest page) before.
export function refreshAfter(loaded) {
  return loaded.length > 0 ? loaded[loaded.length - 1].id : null;
}

// After a refresh whose job JSON is `job`: what the page shows, the older pages kept (`loaded`:
// every event shown once older pages were asked for, else empty), the id to ask older events
// before (null: none older) and the id to ask newer ones after (null: none newer); or null for an
// answer that no longer applies (then nothing changes).
// - Asked with `events_after` = `askedAfter` (refreshAfter's): `job.events` are the ones after it,
//   joined to `loaded` (which reaches it: it only grows while older pages are shown), and
//   `events_newer_after` says more followed them.
// - Asked for the latest page (`askedAfter` null): it is shown, with where older ones start. If
//   older pages were loaded meanwhile, it is joined to them when it reaches them; when it does
//   not, merging would hide the events between, so it starts again from the latest page.
export function afterRefresh(loaded, olderBefore, job, askedAfter = null) {
  const got = job.events || [];
  if (askedAfter !== null && loaded.length > 0 && refreshAfter(loaded) >= askedAfter) {
    const merged = withNewer(loaded, got);
    return { shown: merged, loaded: merged, olderBefore, newerAfter: job.events_newer_after || null };
  }
  const pageStart = askedAfter === null ? job.events_older_before || null : null;
  if (askedAfter === null && loaded.length > 0 && !(pageStart && pageStart > refreshAfter(loaded))) {
    const merged = withNewer(loaded, got);
    return { shown: merged, loaded: merged, olderBefore, newerAfter: null };
  }
  // What it followed is no longer what is loaded (a refresh of the latest page started again
  // meanwhile): a stale answer, which changes nothing.
  if (askedAfter !== null) return null;
  return { shown: got, loaded: [], olderBefore: pageStart, newerAfter: null };
}
