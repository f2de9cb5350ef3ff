// history.js — the room before bootstrap's last 100 events: older pages on scroll-up (newer ones
// on scroll-down in a window, paging.js), the "beginning of the room" marker, the jump to the
// latest message, "go to the beginning" or to a date, and revealing one message (a search hit) in
// its context.
//
// Pages come from GET /api/events/page (the durable log by seq, the same envelopes as the stream)
// and are rendered by the timeline's own renderer (Timeline.prepend), so an old message looks
// exactly as it did live. The timeline keeps the cursor (floorSeq) because trimming moves it.

import { getJson } from "./api.js";
import { gettext } from "./i18n.js";
import { isTurnLifecycle, TERMINAL } from "./turns.js";

const PAGE = 100; // as bootstrap: a page costs what the first screen cost
const REVEAL_PAGE = 500; // the protocol's largest page: a search hit far back needs few requests
const LOAD_MARGIN_PX = 600; // start reading before the reader reaches the very top
const FAR_SCREENS = 2; // further than this from the newest end: offer the jump to latest
const HIGHLIGHT_CLASS = "is-found";
const CONTEXT_BEFORE = 10; // events read above a revealed message, so it does not sit on the edge
const FAR_EVENTS = 1_500; // further back than this, a hit is shown in a window of its own
const WINDOW_AFTER = 250; // of a window's 500 events, those after the hit

const NOTE_TEXT = {
  older: gettext("Scroll up for older messages"),
  loading: gettext("Loading older messages…"),
  failed: gettext("Older messages could not be loaded — scroll up to try again"),
  start: gettext("Beginning of the room"),
};

/**
 * The Turns of an old page that finished within it and that the page does not know yet, so their
 * messages get the same chips ("replied", "failed · CODE") as after bootstrap. A Turn the page
 * already knows (bootstrap, the stream) is left alone: old events must never roll a status back,
 * and a Turn without its end in the page might look active forever.
 */
function learnFinishedTurns(envs, turns) {
  const ended = new Set();
  for (const env of envs) {
    const turnId = env.body && env.body.turnId;
    if (turnId && env.type.startsWith("turn.") && TERMINAL.has(env.type.slice(5)) && !turns.get(turnId)) ended.add(turnId);
  }
  for (const env of envs) if (isTurnLifecycle(env.type) && ended.has(env.body.turnId)) turns.apply(env);
}

export class History {
  /** @param elements {scroller, note, jump}; timeline: the page's Timeline. */
  constructor({ scroller, note, jump }, timeline) {
    Object.assign(this, { scroller, note, jump, timeline });
    this.loading = null;
    this.failed = false;
    scroller.addEventListener("scroll", () => this.onScroll(), { passive: true });
  }

  /** After every bootstrap: the timeline was rebuilt from the newest events. */
  reset() {
    this.failed = false;
    this.render();
    this.fillScreen();
  }

  onScroll() {
    const s = this.scroller;
    if (s.scrollTop < LOAD_MARGIN_PX) this.loadOlder();
    const fromBottom = s.scrollHeight - s.scrollTop - s.clientHeight;
    if (this.timeline.detached && fromBottom < LOAD_MARGIN_PX) this.loadNewer();
    if (fromBottom > FAR_SCREENS * s.clientHeight && this.jump.hidden) {
      this.jump.textContent = `↓ ${gettext("Jump to latest")}`;
      this.jump.hidden = false;
    }
    this.render();
  }

  /** A screen not yet full (short messages, a tall window) cannot be scrolled: read on. */
  async fillScreen() {
    while (this.timeline.hasOlder && !this.failed && this.scroller.scrollHeight <= this.scroller.clientHeight) {
      if (!(await this.loadOlder())) return;
    }
  }

  /** One older page above what is shown; resolves to whether anything was read. */
  loadOlder(limit = PAGE) {
    if (!this.timeline.hasOlder) return Promise.resolve(false);
    this.loading = this.loading || this.readPage(limit).finally(() => {
      this.loading = null;
      this.render();
    });
    this.render();
    return this.loading;
  }

  async readPage(limit) {
    const before = this.timeline.floorSeq;
    const params = new URLSearchParams({ limit: String(limit) });
    if (Number.isFinite(before)) params.set("beforeSeq", String(before));
    let page;
    try {
      page = /** @type {EventsPage} */ (await getJson(`/api/events/page?${params}`));
      this.failed = false;
    } catch {
      this.failed = true;
      return false;
    }
    if (this.timeline.floorSeq !== before) return false; // a new bootstrap rebuilt the timeline meanwhile
    learnFinishedTurns(page.events || [], this.timeline.ctx.turns);
    this.timeline.rememberReferences(page.referencedMessages);
    this.timeline.prepend(page.events || [], { hasOlder: Boolean(page.previousPage) });
    return true;
  }

  /** In a window on the history: the next newer page below it; at the newest end, the page is
   * rebuilt from a fresh bootstrap (live events were not shown meanwhile). */
  loadNewer() {
    if (this.loading || !this.timeline.detached) return this.loading || Promise.resolve(false);
    const after = this.timeline.ceilingSeq;
    this.loading = (async () => {
      let page;
      try {
        page = /** @type {EventsPage} */ (await getJson(`/api/events/page?${new URLSearchParams(
          { afterSeq: String(after), limit: String(PAGE) })}`));
      } catch {
        return false;
      }
      if (!this.timeline.detached || this.timeline.ceilingSeq !== after) return false;
      learnFinishedTurns(page.events || [], this.timeline.ctx.turns);
      this.timeline.rememberReferences(page.referencedMessages);
      this.timeline.append(page.events || []);
      if (!page.nextPage) this.timeline.follow(); // the newest end: back to the live room
      return true;
    })().finally(() => {
      this.loading = null;
      this.render();
    });
    return this.loading;
  }

  /** "Go to the beginning" (``{afterSeq: 0}``) or to a date (``{from: ISO moment}``): a window
   * from there, its first message at the top. Resolves to whether anything was found. */
  async goTo(where) {
    const params = new URLSearchParams({ ...where, limit: String(PAGE) });
    let page;
    try {
      page = /** @type {EventsPage} */ (await getJson(`/api/events/page?${params}`));
    } catch {
      return false;
    }
    if (!(page.events || []).length) return false;
    learnFinishedTurns(page.events, this.timeline.ctx.turns);
    this.timeline.showWindow([], { hasOlder: Boolean(page.previousPage) });
    this.timeline.rememberReferences(page.referencedMessages);
    this.timeline.prepend(page.events, { hasOlder: Boolean(page.previousPage) });
    this.failed = false;
    this.render();
    const first = this.timeline.durable.firstElementChild;
    if (first) first.scrollIntoView({ block: "start" });
    if (first) {
      if (!first.hasAttribute("tabindex")) first.tabIndex = -1; // focusable before roving.js tames it
      first.focus({ preventScroll: true });
    }
    return true;
  }

  /**
   * Bring a message (a search hit {seq, eventId}) on screen in its context: read older pages
   * until it is on the page, scroll it to the middle and highlight it. Resolves to whether it
   * could be shown.
   */
  async reveal({ seq, eventId }) {
    this.timeline.pausedAt = Date.now(); // reading: the newest message must not pull the view away
    if (this.timeline.floorSeq - seq > FAR_EVENTS && !(await this.openWindow(seq))) return false;
    while (this.timeline.floorSeq > seq - CONTEXT_BEFORE && this.timeline.hasOlder) {
      if (this.loading) await this.loading;
      else if (!(await this.loadOlder(REVEAL_PAGE))) break;
    }
    const target = this.timeline.durable.querySelector(`[data-event-id="${CSS.escape(eventId)}"]`);
    if (!target) return false;
    for (const old of this.timeline.durable.querySelectorAll(`.${HIGHLIGHT_CLASS}`)) old.classList.remove(HIGHLIGHT_CLASS);
    target.classList.add(HIGHLIGHT_CLASS);
    target.scrollIntoView({ block: "center" });
    this.timeline.pausedAt = Date.now();
    return true;
  }

  /** Replace the page with the REVEAL_PAGE events around ``seq`` (timeline.showWindow). */
  async openWindow(seq) {
    const params = new URLSearchParams({ beforeSeq: String(seq + WINDOW_AFTER), limit: String(REVEAL_PAGE) });
    let page;
    try {
      page = /** @type {EventsPage} */ (await getJson(`/api/events/page?${params}`));
    } catch {
      return false;
    }
    learnFinishedTurns(page.events || [], this.timeline.ctx.turns);
    this.timeline.showWindow([], { hasOlder: Boolean(page.previousPage) });
    this.timeline.rememberReferences(page.referencedMessages);
    this.timeline.prepend(page.events || [], { hasOlder: Boolean(page.previousPage) });
    this.render();
    return true;
  }

  render() {
    let state = "start";
    if (this.loading) state = "loading";
    else if (this.failed) state = "failed";
    else if (this.timeline.hasOlder) state = "older";
    if (this.note.dataset.state === state && !this.note.hidden) return;
    this.note.dataset.state = state;
    this.note.textContent = NOTE_TEXT[state];
    this.note.hidden = false;
  }
}
