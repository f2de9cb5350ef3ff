// threads.js — a prompt and the replies it asked for read as one unit, and one author's
// consecutive messages share one avatar and name.
//
// A thread is a container placed right after its prompt's element: every Turn bubble of that
// prompt goes into it (live or settled), so the replies of an @all are never interleaved with later
// prompts. It is a page layout only: the durable log and the stream are unchanged, and a refresh
// builds the same threads from the same events. A reply inside its prompt's thread drops the
// "↩ prompt" quote; the thread can be collapsed to one line.

import { h } from "./dom.js";
import { format, gettext, ngettext } from "./i18n.js";

export class Threads {
  /** @param timeline the page's Timeline: its chipRows find a prompt's element. */
  constructor(timeline) {
    this.timeline = timeline;
  }

  /** The reply list under the message ``sourceEventId`` (created on first use), or null when that
   * message is not on the page. */
  home(sourceEventId) {
    if (!sourceEventId) return null;
    const chips = this.timeline.chipRows.get(sourceEventId);
    const prompt = chips && chips.closest("article");
    if (!prompt || !prompt.parentElement) return null;
    let thread = prompt.nextElementSibling;
    if (!thread || !thread.classList.contains("thread") || thread.dataset.threadOf !== sourceEventId) {
      thread = this.create(prompt, sourceEventId);
    }
    return thread.querySelector(".thread-list");
  }

  create(prompt, sourceEventId) {
    const list = h("div", { class: "thread-list", id: `thread-${sourceEventId}`, role: "group",
      "aria-label": format(gettext("Replies to %(message)s"),
        { message: prompt.getAttribute("aria-label") || gettext("this message") }) });
    const toggle = h("button", { type: "button", class: "thread-toggle link-btn", "aria-expanded": "true",
      "aria-controls": list.id, hidden: true });
    const thread = h("div", { class: "thread", dataset: { threadOf: sourceEventId, seq: prompt.dataset.seq || "" } },
      toggle, list);
    toggle.addEventListener("click", () => this.setOpen(thread, list.hidden));
    prompt.after(thread);
    prompt.classList.add("has-thread");
    return thread;
  }

  /** A reply went into ``list``: its count in the toggle; the toggle shows from two replies on. */
  changed(list) {
    const thread = list.parentElement;
    if (!thread) return;
    this.label(thread);
  }

  setOpen(thread, open) {
    const list = thread.querySelector(".thread-list");
    list.hidden = !open;
    thread.classList.toggle("is-collapsed", !open);
    this.label(thread);
  }

  label(thread) {
    const list = thread.querySelector(".thread-list");
    const toggle = thread.querySelector(".thread-toggle");
    const n = list.childElementCount;
    toggle.hidden = n < 2 && !list.hidden;
    toggle.setAttribute("aria-expanded", String(!list.hidden));
    toggle.textContent = format(list.hidden ? ngettext("Show %(count)s reply", "Show %(count)s replies", n)
      : ngettext("Hide %(count)s reply", "Hide %(count)s replies", n), { count: n });
  }
}

/** The same author as the message just above (nothing between them): no second avatar and name. */
export function groupByAuthor(el) {
  if (!el || !el.matches || !el.matches("article.msg")) return;
  const previous = el.previousElementSibling;
  const same = previous && previous.matches("article.msg") && !previous.classList.contains("is-live")
    && previous.dataset.actorId === el.dataset.actorId;
  el.classList.toggle("msg--cont", Boolean(same));
}
