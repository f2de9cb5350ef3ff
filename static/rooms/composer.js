// composer.js — recipients, reply/forward context, the draft, and sending.
//
// A send gets a fresh clientCommandId; a retry of the *same* payload after a failure reuses it,
// so a request that reached the server before the connection broke is not posted twice (the
// server answers a repeated id with the stored receipt). Editing the message mints a new id.

import { postJson } from "./api.js";
import { codePoints, excerpt, h, newCommandId, tintFor } from "./dom.js";
import { loadSetting as load, saveSetting as save } from "./storage.js";

export const MAX_CHARACTERS = 131_072;
const DRAFT_KEY = "groupx.draft";
const RECIPIENTS_KEY = "groupx.recipients";

/** The form's submit and Enter in its box send; Shift+Enter is a newline, and an IME composition
 * in progress is never sent (the assistant's side chat sends the same way). */
export function sendOnEnter(form, input, submit) {
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    submit();
  });
  input.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing && !event.altKey && !event.ctrlKey) {
      event.preventDefault();
      submit();
    }
  });
}

export class Composer {
  /**
   * @param el {form, input, send, chips, counter, hint, context, error}
   * @param ctx {onSent(reply, payload)}
   */
  constructor(el, ctx) {
    Object.assign(this, el);
    this.ctx = ctx;
    this.agents = [];
    this.all = true;
    this.picked = new Set();
    this.reference = null; // {kind: "reply" | "forward", envelope}
    this.sending = false;
    this.failed = null; // {id, key} of the last failed payload
    this.input.value = load(DRAFT_KEY) || "";
    const stored = load(RECIPIENTS_KEY);
    if (stored && stored !== "@all") {
      this.all = false;
      this.picked = new Set(stored.split(","));
    }
    sendOnEnter(this.form, this.input, () => this.submit());
    this.input.addEventListener("input", () => {
      clearTimeout(this.draftTimer);
      this.draftTimer = setTimeout(() => save(DRAFT_KEY, this.input.value || null), 250);
      this.refresh();
    });
    // The draft is saved 250 ms after typing stops, and at once when the page goes away.
    window.addEventListener("pagehide", () => save(DRAFT_KEY, this.input.value || null));
    this.context.querySelector(".context-clear").addEventListener("click", () => this.clearReference());
    this.error.querySelector(".retry").addEventListener("click", () => this.submit());
    this.refresh();
  }

  setAgents(cards) {
    this.agents = cards.filter((card) => card.enabled !== false);
    const ids = new Set(this.agents.map((a) => a.actorId));
    this.picked = new Set([...this.picked].filter((id) => ids.has(id)));
    if (!this.all && !this.picked.size) this.all = true;
    this.renderChips();
    this.refresh();
  }

  /** Build the chips once per roster; later changes only flip aria-pressed, so keyboard focus
   * stays on the chip the user just pressed. */
  renderChips() {
    const chip = (label, onclick, actorId) => {
      const button = h("button", { type: "button", class: "recipient", "aria-pressed": "false", text: label, onclick });
      if (actorId) tintFor(button, actorId);
      else button.classList.add("recipient--all");
      return button;
    };
    this.allChip = chip("@all", () => this.toggleAll());
    this.agentChips = new Map(this.agents.map((a) => [a.actorId, chip(`@${a.displayName}`, () => this.toggle(a.actorId), a.actorId)]));
    this.chips.replaceChildren(this.allChip, ...this.agentChips.values());
    this.paintChips();
  }

  paintChips() {
    this.allChip.setAttribute("aria-pressed", String(this.all));
    for (const [actorId, button] of this.agentChips) {
      button.setAttribute("aria-pressed", String(this.all || this.picked.has(actorId)));
    }
  }

  toggleAll() {
    this.all = !this.all;
    this.picked = new Set(); // @all on: everyone; @all off: pick agents one by one
    this.recipientsChanged();
  }

  toggle(actorId) {
    if (this.all) {
      // From "everyone", a click on one agent means "everyone but this one".
      this.all = false;
      this.picked = new Set(this.agents.map((a) => a.actorId).filter((id) => id !== actorId));
    } else if (this.picked.has(actorId)) this.picked.delete(actorId);
    else this.picked.add(actorId);
    this.recipientsChanged();
  }

  /** The @ picker's choice. "@all" addresses everyone; an agent is added to those addressed, and
   * from "everyone" it means that agent alone (typing "@Kimi" is talking to Kimi). */
  address(actorId) {
    if (actorId === "@all") {
      this.all = true;
      this.picked = new Set();
    } else if (this.all) {
      this.all = false;
      this.picked = new Set([actorId]);
    } else this.picked.add(actorId);
    this.recipientsChanged();
  }

  recipientsChanged() {
    save(RECIPIENTS_KEY, this.all ? "@all" : [...this.picked].join(","));
    this.paintChips();
    this.refresh();
  }

  recipients() {
    return this.all ? ["@all"] : [...this.picked].sort();
  }

  setReference(kind, envelope) {
    this.reference = { kind, envelope };
    const label = kind === "forward" ? "Forwarding" : "Replying to";
    const author = tintFor(h("strong", { text: envelope.actor.displayName }), envelope.actor.actorId);
    this.context.querySelector(".context-text").replaceChildren(`${label} `, author, ": ",
      h("span", { class: "context-excerpt", text: excerpt(envelope.body && envelope.body.content, 160) }));
    this.context.hidden = false;
    this.refresh();
    this.input.focus();
  }

  clearReference() {
    this.reference = null;
    this.context.hidden = true;
    this.refresh();
  }

  payload() {
    const body = { to: this.recipients(), content: this.input.value };
    if (this.reference) body[this.reference.kind === "forward" ? "forwardedEventId" : "replyToEventId"] = this.reference.envelope.eventId;
    return body;
  }

  refresh() {
    const length = codePoints(this.input.value);
    this.counter.textContent = `${length.toLocaleString("en-US")} / ${MAX_CHARACTERS.toLocaleString("en-US")}`;
    this.counter.classList.toggle("is-over", length > MAX_CHARACTERS);
    const to = this.recipients();
    let hint = "Enter to send · Shift+Enter for a new line";
    if (!to.length) hint = "Pick at least one recipient";
    else if (length > MAX_CHARACTERS) hint = "The message is too long";
    this.hint.textContent = hint;
    const names = this.all ? "everyone" : this.agents.filter((a) => this.picked.has(a.actorId)).map((a) => a.displayName).join(", ");
    this.input.placeholder = to.length ? `Message ${names}…` : "Pick a recipient first…";
    this.send.disabled = this.sending || !to.length || !this.input.value.trim() || length > MAX_CHARACTERS;
  }

  showError(error) {
    this.error.querySelector(".error-code").textContent = error.code;
    this.error.querySelector(".error-message").textContent = error.message || "";
    this.error.hidden = false;
  }

  async submit() {
    if (this.sending) return;
    this.refresh();
    if (this.send.disabled) return;
    const body = this.payload();
    const key = JSON.stringify(body);
    // The same payload after a failure keeps its id: the server may already have accepted it.
    const id = this.failed && this.failed.key === key ? this.failed.id : newCommandId();
    this.sending = true;
    this.form.setAttribute("aria-busy", "true");
    this.refresh();
    // PostMessageBody → PostMessageAccepted (api.js)
    const reply = await postJson("/api/messages", /** @type {PostMessageBody} */ ({ clientCommandId: id, ...body }));
    this.sending = false;
    this.form.removeAttribute("aria-busy");
    if (reply.ok) {
      this.failed = null;
      this.error.hidden = true;
      // Clear only if the user has not typed on while the request was in flight.
      if (JSON.stringify(this.payload()) === key) {
        this.input.value = "";
        save(DRAFT_KEY, null);
        this.clearReference();
      }
      this.ctx.onSent(reply.data, body);
    } else {
      this.failed = { id, key };
      this.showError(reply.error);
    }
    this.refresh();
  }
}
