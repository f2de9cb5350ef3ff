// paging.js — the timeline as a window on a long history: at most MAX_ITEMS messages on the page.
//
// Scrolling up prepends older pages (Timeline.prepend) and, past the page's size, drops the newest
// items here: the page becomes a window (timeline.detached) whose newer side is read again, page by
// page, when the reader scrolls down (appendNewer), dropping the oldest items in turn. Live events
// wait while the newest end is off the page; reaching it again rebuilds the page from a fresh
// bootstrap (history.js), so nothing streamed meanwhile is missed.

import { gettext } from "./i18n.js";
import { groupByAuthor } from "./threads.js";
import { TERMINAL } from "./turns.js";

// At most 300 messages on the page (FEATURES §17 allows 500), however far the reader scrolls:
// whichever end is far from the reader is dropped, 50 at a time, and read again from the log.
export const MAX_ITEMS = 300;
export const TRIM_BATCH = 50;

/** Items on the page: the timeline's rows, and each reply inside a prompt's thread. */
export function itemCount(durable) {
  return durable.childElementCount + durable.querySelectorAll(".thread-list > *").length;
}

/**
 * Show a window of old events (a search hit far back, the beginning, a date) instead of the newest
 * end: rendering a 100,000-event room down to it would not fit in a page. Until the reader goes
 * back to the latest (which rebuilds the page from a fresh bootstrap), live events are not shown.
 */
export function showWindow(timeline, envs, { hasOlder }) {
  timeline.reset({ hasOlder });
  timeline.prepend(envs, { hasOlder });
  timeline.detached = true;
  timeline.live.hidden = true;
  timeline.jump.textContent = `↓ ${gettext("Back to the latest")}`;
  timeline.jump.hidden = false;
}

/**
 * An older page of durable envelopes (seq order, all below floorSeq), rendered by the same code as
 * live events into a detached container and then put above what is shown. The item that was first
 * stays exactly where the reader sees it, whatever the browser's own scroll anchoring did.
 */
export function prependOlder(timeline, envs, { hasOlder }) {
  const older = envs.filter((env) => env.seq < timeline.floorSeq);
  const anchor = timeline.durable.firstElementChild;
  const before = anchor ? anchor.getBoundingClientRect().top : 0;
  const home = timeline.durable;
  timeline.prepending = { home, created: new Set() };
  timeline.durable = document.createElement("div");
  try {
    // Trimmed items are read again: their events were seen, but are no longer on the page.
    for (const env of older) {
      timeline.seen.delete(env.eventId);
      timeline.applyDurable(env);
    }
    timeline.flush();
    home.prepend(...timeline.durable.childNodes);
    dropStartedOnly(timeline, timeline.prepending.created);
  } finally {
    timeline.durable = home;
    timeline.prepending = null;
  }
  groupByAuthor(anchor);
  if (older.length) timeline.floorSeq = older[0].seq;
  timeline.hasOlder = hasOlder;
  if (anchor) timeline.scroller.scrollTop += anchor.getBoundingClientRect().top - before;
  dropNewest(timeline);
}

/** An old turn.started whose Turn left nothing in that page (its end is newer, already shown, or
 * it failed before writing) must not leave a "working" bubble behind. */
function dropStartedOnly(timeline, turnIds) {
  for (const turnId of turnIds) {
    const bubble = timeline.bubbles.get(turnId);
    const turn = timeline.ctx.turns.get(turnId);
    if (!bubble || bubble.settled || (turn && !TERMINAL.has(turn.status))) continue;
    bubble.el.remove();
    timeline.bubbles.delete(turnId);
  }
}

/** A newer page (seq order, above timeline.ceilingSeq) below a detached window; the oldest items
 * go so the page keeps its size, and what the reader sees stays where it is. */
export function appendNewer(timeline, envs) {
  if (!timeline.detached) return;
  const { durable } = timeline;
  timeline.appending = true;
  try {
    for (const env of envs) {
      // Dropped items are read again; an item still on the page (a bubble whose reply was among
      // the dropped ones) keeps its place.
      if (!durable.querySelector(`[data-event-id="${CSS.escape(env.eventId)}"]`)) timeline.seen.delete(env.eventId);
      timeline.applyDurable(env);
    }
    timeline.flush();
  } finally {
    timeline.appending = false;
  }
  const keep = durable.lastElementChild;
  const before = keep ? keep.getBoundingClientRect().top : 0;
  timeline.trim();
  if (keep) timeline.scroller.scrollTop += keep.getBoundingClientRect().top - before;
}

/** After an older page: the newest items beyond the page's size go, and the page becomes a window
 * on the history (its newer side is read again from ceilingSeq). */
function dropNewest(timeline) {
  const { durable } = timeline;
  if (itemCount(durable) <= MAX_ITEMS) return;
  while (itemCount(durable) > MAX_ITEMS - TRIM_BATCH && durable.lastElementChild) {
    const last = durable.lastElementChild;
    if (last.dataset.seq) timeline.ceilingSeq = Math.min(timeline.ceilingSeq, Number(last.dataset.seq) - 1);
    timeline.forget(last);
    last.remove();
  }
  if (!timeline.detached) {
    timeline.detached = true;
    timeline.live.hidden = true;
    timeline.jump.textContent = `↓ ${gettext("Back to the latest")}`;
    timeline.jump.hidden = false;
  }
}
