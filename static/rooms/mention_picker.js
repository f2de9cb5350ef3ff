// mention_picker.js — "@" in the message box opens a list of who can be addressed.
//
// Typing "@" at the start of a word lists @all and the agents whose name (or a word of it) starts
// with what follows. Arrows move, Enter or Tab picks, Escape closes, a click picks. Picking writes
// "@Name " into the text, so the message reads as addressed, and presses the recipient chip: the
// chips, not the text, decide who receives a message (the server never parses mentions).

import { avatarInitials } from "./avatars.js";
import { h, tintFor } from "./dom.js";
import { gettext } from "./i18n.js";

const TRIGGER = /(?:^|\s)@([\p{L}\p{N}_.-]*)$/u; // an "@word" that ends at the caret

export class MentionPicker {
  /**
   * @param input the message textarea; the list is placed next to it
   * @param ctx {agents() → [{actorId, displayName}], onPick(actorId | "@all")}
   */
  constructor(input, ctx) {
    this.input = input;
    this.ctx = ctx;
    this.options = []; // [{id, label, actorId}]
    this.active = 0;
    this.start = -1; // where the "@" being completed sits in the text
    this.dismissed = -1; // an "@" closed with Escape stays closed until another one is typed
    this.list = h("ul", { id: "mention-list", class: "mention-list", role: "listbox", "aria-label": gettext("Address someone"),
      hidden: true });
    input.parentElement.append(this.list);
    input.setAttribute("aria-autocomplete", "list");
    input.setAttribute("aria-controls", this.list.id);
    input.addEventListener("input", () => this.update());
    input.addEventListener("click", () => this.update());
    input.addEventListener("blur", () => this.close());
    // Capture on the form: these keys must reach the picker before the composer's Enter-to-send.
    input.form.addEventListener("keydown", (event) => this.key(event), true);
    this.list.addEventListener("mousedown", (event) => event.preventDefault()); // keep focus in the box
  }

  get isOpen() {
    return !this.list.hidden;
  }

  /** Open, refilter or close the list after the text or the caret moved. */
  update() {
    const caret = this.input.selectionStart;
    const before = this.input.value.slice(0, caret);
    const match = this.input.selectionEnd === caret ? TRIGGER.exec(before) : null;
    if (!match) {
      this.dismissed = -1;
      this.close();
      return;
    }
    const start = caret - match[1].length - 1;
    if (start === this.dismissed) return;
    this.start = start;
    this.show(this.matching(match[1].toLowerCase()));
  }

  matching(query) {
    const options = [];
    if ("all".startsWith(query)) options.push({ actorId: "@all", label: "@all", hint: gettext("everyone") });
    for (const agent of this.ctx.agents()) {
      const name = agent.displayName || agent.actorId;
      const words = [name, ...name.split(/\s+/), agent.actorId.replace(/^agent:/, "")].map((w) => w.toLowerCase());
      if (words.some((w) => w.startsWith(query))) options.push({ actorId: agent.actorId, label: name });
    }
    return options;
  }

  show(options) {
    if (!options.length) {
      this.close();
      return;
    }
    const keep = this.options[this.active] && options.findIndex((o) => o.actorId === this.options[this.active].actorId);
    this.options = options;
    this.active = keep > 0 ? keep : 0;
    this.list.replaceChildren(...options.map((option, i) => {
      const avatar = option.actorId === "@all"
        ? h("span", { class: "avatar mention-all", "aria-hidden": "true", text: "@" })
        : tintFor(h("span", { class: "avatar", "aria-hidden": "true",
          text: avatarInitials(option.actorId, option.label) }), option.actorId);
      const item = h("li", { id: `mention-option-${i}`, class: "mention-option", role: "option",
        dataset: { actorId: option.actorId } }, avatar, h("span", { class: "mention-name", text: option.label }),
      option.hint ? h("span", { class: "mention-hint", text: option.hint }) : null);
      item.addEventListener("click", () => this.pick(i));
      return item;
    }));
    this.list.hidden = false;
    this.paintActive();
  }

  paintActive() {
    [...this.list.children].forEach((item, i) => item.setAttribute("aria-selected", String(i === this.active)));
    const current = this.list.children[this.active];
    this.input.setAttribute("aria-activedescendant", current.id);
    current.scrollIntoView({ block: "nearest" });
  }

  close() {
    if (!this.isOpen) return;
    this.list.hidden = true;
    this.list.replaceChildren();
    this.options = [];
    this.input.removeAttribute("aria-activedescendant");
  }

  key(event) {
    if (!this.isOpen || event.target !== this.input || event.isComposing) return;
    const moves = { ArrowDown: 1, ArrowUp: -1 };
    if (event.key in moves) {
      this.active = (this.active + moves[event.key] + this.options.length) % this.options.length;
      this.paintActive();
    } else if ((event.key === "Enter" || event.key === "Tab") && !event.shiftKey) {
      this.pick(this.active);
    } else if (event.key === "Escape") {
      this.dismissed = this.start;
      this.close();
    } else return;
    event.preventDefault();
    event.stopPropagation();
  }

  /** Replace the "@query" with the chosen name and address that agent. */
  pick(index) {
    const option = this.options[index];
    if (!option) return;
    const caret = this.input.selectionStart;
    const text = `${option.actorId === "@all" ? "@all" : `@${option.label}`} `;
    this.input.setRangeText(text, this.start, caret, "end");
    this.close();
    this.ctx.onPick(option.actorId);
    // The composer keeps its draft and counter up to date from input events.
    this.input.dispatchEvent(new Event("input", { bubbles: true }));
    this.input.focus();
  }
}
