// search.js — the header's search box over the room's messages (GET /api/search).
//
// Results list every author (you, agents, system messages), newest first; picking one hands it
// to history.js, which reads the pages around it, scrolls to it and highlights it. Snippets are
// text nodes; the words searched for are wrapped in <mark> without any HTML parsing.

import { getJson } from "./api.js";
import { clockTime, h, replaceChildren, tintFor } from "./dom.js";
import { format, gettext } from "./i18n.js";

const DEBOUNCE_MS = 250;
const RESULTS = 20;

function marked(text, terms) {
  const lowered = text.toLowerCase();
  const parts = [];
  let at = 0;
  while (at < text.length) {
    let next = -1;
    let length = 0;
    for (const term of terms) {
      const found = lowered.indexOf(term, at);
      if (found >= 0 && (next < 0 || found < next)) [next, length] = [found, term.length];
    }
    if (next < 0) break;
    if (next > at) parts.push(text.slice(at, next));
    parts.push(h("mark", { text: text.slice(next, next + length) }));
    at = next + length;
  }
  parts.push(text.slice(at));
  return parts;
}

function dayAndTime(iso) {
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return "";
  return `${date.toLocaleDateString([], { month: "short", day: "numeric" })} ${clockTime(iso)}`;
}

export class SearchBox {
  /** @param elements {form, input, results}; onPick(hit) resolves to whether it was shown. */
  constructor({ form, input, results }, { onPick }) {
    Object.assign(this, { form, input, results, onPick });
    this.timer = null;
    this.asked = 0; // only the newest request may paint its answer
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      this.search();
    });
    input.addEventListener("input", () => {
      clearTimeout(this.timer);
      this.timer = setTimeout(() => this.search(), DEBOUNCE_MS);
    });
    input.addEventListener("keydown", (event) => {
      if (event.key === "Escape") this.close();
      if (event.key === "ArrowDown") {
        event.preventDefault();
        const first = results.querySelector("button");
        if (first) first.focus();
      }
    });
    results.addEventListener("keydown", (event) => this.moveFocus(event));
    document.addEventListener("pointerdown", (event) => {
      if (!form.contains(event.target)) this.close();
    });
  }

  close() {
    this.results.hidden = true;
  }

  async search() {
    clearTimeout(this.timer);
    const query = this.input.value.trim();
    if (!query) {
      this.close();
      return;
    }
    const asked = ++this.asked;
    this.show(h("p", { class: "search-status", text: gettext("Searching…") }));
    let answer;
    try {
      answer = /** @type {SearchPage} */ (await getJson(`/api/search?${new URLSearchParams({ q: query, limit: String(RESULTS) })}`));
    } catch {
      if (asked === this.asked) this.show(h("p", { class: "search-status", text: gettext("Search failed — try again") }));
      return;
    }
    if (asked !== this.asked) return;
    const terms = query.toLowerCase().split(/\s+/).filter(Boolean);
    const items = answer.items || [];
    if (!items.length) {
      this.show(h("p", { class: "search-status", text: format(gettext("No messages match “%(query)s”"), { query }) }));
      return;
    }
    this.show(h("ul", { class: "search-hits", "aria-label": format(gettext("Messages matching %(query)s"), { query }) },
      items.map((hit) => h("li", {}, this.hitButton(hit, terms)))),
    answer.nextPage ? h("p", { class: "search-status", text: format(gettext("Showing the newest %(count)s"), { count: items.length }) }) : null);
  }

  hitButton(hit, terms) {
    const author = tintFor(h("strong", { class: "hit-author", text: hit.author.displayName }), hit.author.actorId);
    return h("button", {
      type: "button", class: "search-hit", dataset: { seq: String(hit.seq), eventId: hit.eventId },
      onclick: () => this.pick(hit),
    }, h("span", { class: "hit-head" }, author, h("time", { class: "hit-time", datetime: hit.occurredAt,
      text: dayAndTime(hit.occurredAt) })), h("span", { class: "hit-snippet" }, marked(hit.snippet, terms)));
  }

  async pick(hit) {
    this.close();
    const shown = await this.onPick(hit);
    if (!shown) this.show(h("p", { class: "search-status", text: gettext("That message is no longer in the room") }));
  }

  show(...children) {
    replaceChildren(this.results, children);
    this.results.hidden = false;
  }

  moveFocus(event) {
    const buttons = [...this.results.querySelectorAll("button")];
    const at = buttons.indexOf(document.activeElement);
    if (event.key === "Escape") {
      this.close();
      this.input.focus();
    } else if (event.key === "ArrowDown" && at >= 0) {
      event.preventDefault();
      (buttons[at + 1] || buttons[at]).focus();
    } else if (event.key === "ArrowUp" && at >= 0) {
      event.preventDefault();
      (at ? buttons[at - 1] : this.input).focus();
    }
  }
}
