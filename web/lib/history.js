// The job page's state history across refreshes and "Show older events" pages. Pure: no DOM, no
// fetch (tests/ui/history_test.mjs runs it under node). Events are oldest first; ids only grow.

// `events` followed by those of `more` that are newer than its last.
export function withNewer(events, more) {
  const last = events.length > 0 ? events[events.length - 1].id : 0;
  return events.concat(more.filter((e) => e.id > last));
}

// After a refresh whose job JSON is `job` (its latest page of `events`, and `events_older_before`
// when older ones exist): what the page shows, the older pages kept (`loaded`: every event shown
// once older pages were asked for, else empty) and the id to ask older events before (null: none
// older). When more than a page arrived since the last refresh, the latest page no longer reaches
// what is shown, and merging would hide the events between: it starts again from the latest page.
// (So it does when exactly a page arrived: event ids are fleet-wide, so they cannot tell.)
export function afterRefresh(loaded, olderBefore, job) {
  const latest = job.events || [];
  const pageStart = job.events_older_before || null;
  if (loaded.length > 0 && !(pageStart && pageStart > loaded[loaded.length - 1].id)) {
    const merged = withNewer(loaded, latest);
    return { shown: merged, loaded: merged, olderBefore };
  }
  return { shown: latest, loaded: [], olderBefore: pageStart };
}
