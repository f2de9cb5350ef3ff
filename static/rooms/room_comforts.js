// room_comforts.js — small comforts around the timeline and the message box: "Go to" the beginning
// or a date, the "New messages" divider after an absence, "Stop all" while Turns run, a message box
// that grows with its text and Up-arrow that brings back the last message sent.

import { format, gettext, ngettext } from "./i18n.js";
import { loadSetting, saveSetting } from "./storage.js";
import { CANCELLABLE } from "./turns.js";

const SEEN_KEY = "groupx.lastSeenSeq";
const GROW_MAX_SHARE = 0.4; // of the window's height: the timeline keeps the rest

/** "Go to": the beginning of the room or the first message of a date, from the history pages. */
export class GoToMenu {
  constructor({ menu, start, date, go, note }, history) {
    Object.assign(this, { menu, note, history });
    start.addEventListener("click", () => this.run({ afterSeq: "0" }, gettext("The room has no messages yet.")));
    const byDate = () => {
      if (!date.value) {
        this.note.textContent = gettext("Choose a date first.");
        date.focus();
        return;
      }
      // The reader's midnight of that day, sent as an instant (the server compares in UTC).
      const from = new Date(`${date.value}T00:00:00`).toISOString();
      this.run({ from }, gettext("Nothing was written on or after that date."));
    };
    go.addEventListener("click", byDate);
    date.addEventListener("keydown", (event) => {
      if (event.key !== "Enter") return;
      event.preventDefault();
      byDate();
    });
  }

  async run(where, nothing) {
    this.note.textContent = gettext("Loading…");
    if (await this.history.goTo(where)) {
      this.note.textContent = "";
      this.menu.open = false;
    } else {
      this.note.textContent = nothing;
    }
  }
}

/**
 * The newest seq read while the page was visible, kept across visits: after an absence (another
 * tab, a closed page) a "New messages" divider goes above the first message that came meanwhile.
 */
export class UnreadMarker {
  constructor(timeline) {
    this.timeline = timeline;
    const stored = Number(loadSetting(SEEN_KEY));
    this.seenSeq = Number.isInteger(stored) && stored > 0 ? stored : null;
    document.addEventListener("visibilitychange", () => {
      if (document.visibilityState === "hidden") {
        this.save();
        this.timeline.markUnreadAfter(this.seenSeq);
      } else {
        this.timeline.markUnreadAfter(null); // a divider already drawn stays; no new one while here
        this.read(this.timeline.ceilingSeq);
      }
    });
    addEventListener("pagehide", () => this.save());
  }

  /** Before a bootstrap renders: messages newer than what was read get the divider. */
  beforeBoot() {
    this.timeline.markUnreadAfter(this.seenSeq);
  }

  /** After it rendered: a reader looking at the page needs no divider for what comes next. */
  afterBoot() {
    if (document.visibilityState === "visible") this.timeline.markUnreadAfter(null);
  }

  /** A durable event was applied: read, if the page is in front of the reader. */
  seen(env) {
    if (document.visibilityState === "visible" && !this.timeline.detached) this.read(env.seq);
  }

  read(seq) {
    if (!Number.isInteger(seq) || seq <= (this.seenSeq || 0)) return;
    this.seenSeq = seq;
    if (!this.saveQueued) {
      this.saveQueued = true;
      requestAnimationFrame(() => this.save());
    }
  }

  save() {
    this.saveQueued = false;
    if (this.seenSeq) saveSetting(SEEN_KEY, String(this.seenSeq));
  }
}

/** "Stop all": shown while any Turn can be cancelled; one cancel command per Turn. */
export class StopAll {
  constructor(button, turns, cancel) {
    Object.assign(this, { button, turns });
    this.queued = false;
    button.addEventListener("click", () => {
      for (const turn of this.cancellable()) cancel(turn.turnId);
    });
  }

  cancellable() {
    return this.turns.active().filter((turn) => CANCELLABLE.has(turn.status));
  }

  /** Recount at most once a frame (a burst of events changes many Turns at once). */
  schedule() {
    if (this.queued) return;
    this.queued = true;
    requestAnimationFrame(() => {
      this.queued = false;
      const n = this.cancellable().length;
      this.button.hidden = n === 0;
      this.button.textContent = n > 1 ? format(gettext("Stop all (%(count)s)"), { count: n }) : gettext("Stop all");
      this.button.setAttribute("aria-label", format(ngettext("Stop all %(count)s running or queued Turn",
        "Stop all %(count)s running or queued Turns", n), { count: n }));
    });
  }
}

/** The message box grows with its text (up to 40 % of the window); Up in an empty box recalls
 * the last message sent, to correct or resend it. */
export class ComposerComforts {
  constructor(input, lastOwn) {
    Object.assign(this, { input, lastOwn });
    input.addEventListener("input", () => this.grow());
    input.addEventListener("keydown", (event) => this.recall(event));
    addEventListener("resize", () => this.grow());
    this.grow();
  }

  grow() {
    const el = this.input;
    el.style.height = "";
    if (el.scrollHeight <= el.clientHeight) return;
    const frame = el.offsetHeight - el.clientHeight;
    el.style.height = `${Math.min(el.scrollHeight + frame, Math.round(innerHeight * GROW_MAX_SHARE))}px`;
  }

  recall(event) {
    if (event.key !== "ArrowUp" || event.defaultPrevented || event.shiftKey || event.altKey || event.ctrlKey
      || event.metaKey || this.input.value) return;
    const env = this.lastOwn();
    const text = env && env.body && typeof env.body.content === "string" ? env.body.content : "";
    if (!text) return;
    event.preventDefault();
    this.input.value = text;
    this.input.setSelectionRange(text.length, text.length);
    this.input.dispatchEvent(new Event("input", { bubbles: true })); // the counter, the draft, the height
  }
}
