// composer.js — recipients, reply/forward context, the draft, and sending.
//
// A send gets a fresh clientCommandId; a retry of the *same* payload after a failure reuses it,
// so a request that reached the server before the connection broke is not posted twice (the
// server answers a repeated id with the stored receipt). Editing the message mints a new id.
// A send that failed on the network is retried by itself, under that same id, when the stream is
// back (``streamBack``).
//
// Addressing is explicit: the chips (or the @ picker) choose the recipients, the Send button and
// the placeholder name them, and text never routes by itself (FEATURES §1, §22). A typed "@Name" of
// a room agent who is not addressed stops the send once with a warning that offers to add them.

import { postJson } from "./api.js";
import { codePoints, excerpt, h, newCommandId, tintFor } from "./dom.js";
import { format, gettext, ngettext } from "./i18n.js";
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
   * @param el {form, input, send, chips, counter, hint, context, error, mentionWarning?, toSummary?}
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
    this.failed = null; // {id, key, code} of the last failed payload
    this.mentionsAccepted = null; // the payload key sent anyway despite a warning about mentions
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
    if (this.toSummary) {
      // On a phone the chips fold behind "To: …"; a press unfolds them (room.css shows both on wide screens).
      this.toSummary.addEventListener("click", () => {
        const open = this.toSummary.getAttribute("aria-expanded") !== "true";
        this.toSummary.setAttribute("aria-expanded", String(open));
        this.chips.classList.toggle("is-open", open);
      });
    }
    if (this.mentionWarning) {
      this.mentionWarning.querySelector(".mention-send-anyway").addEventListener("click", () => {
        this.mentionsAccepted = JSON.stringify(this.payload());
        this.submit();
      });
    }
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
    this.agentChips = new Map(this.agents.map((a) => [a.actorId,
      chip(`@${a.displayName}`, (event) => this.choose(a.actorId, event.shiftKey || event.ctrlKey || event.metaKey), a.actorId)]));
    for (const [actorId, button] of this.agentChips) {
      // Shift+Enter / Shift+Space on a chip is the keyboard's Shift-click: add or remove.
      button.addEventListener("keydown", (event) => {
        if ((event.key === "Enter" || event.key === " ") && (event.shiftKey || event.ctrlKey)) {
          event.preventDefault();
          this.choose(actorId, true);
        }
      });
    }
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

  /** A chip pressed. From "everyone", a plain press means that agent alone (as the @ picker does);
   * otherwise, and with Shift or Ctrl from anywhere, the press adds or removes that one agent. */
  choose(actorId, addOrRemove) {
    if (this.all && !addOrRemove) {
      this.all = false;
      this.picked = new Set([actorId]);
    } else if (this.all) {
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
    this.hideMentionWarning();
    save(RECIPIENTS_KEY, this.all ? "@all" : [...this.picked].join(","));
    this.paintChips();
    this.refresh();
  }

  recipients() {
    return this.all ? ["@all"] : [...this.picked].sort();
  }

  setReference(kind, envelope) {
    this.reference = { kind, envelope };
    const label = kind === "forward" ? gettext("Forwarding") : gettext("Replying to");
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

  /** "Kimi", "Kimi and Grok", "all 5", or null when nobody is addressed. */
  recipientNames() {
    if (this.all) {
      return this.agents.length === 1 ? this.agents[0].displayName
        : format(gettext("all %(count)s"), { count: this.agents.length });
    }
    const names = this.agents.filter((a) => this.picked.has(a.actorId)).map((a) => a.displayName);
    if (!names.length) return null;
    return names.length === 1 ? names[0] : format(gettext("%(names)s and %(last)s"),
      { names: names.slice(0, -1).join(gettext(", ")), last: names[names.length - 1] });
  }

  refresh() {
    const length = codePoints(this.input.value);
    this.counter.textContent = `${length.toLocaleString("en-US")} / ${MAX_CHARACTERS.toLocaleString("en-US")}`;
    this.counter.classList.toggle("is-over", length > MAX_CHARACTERS);
    const to = this.recipients();
    let hint = gettext("Enter to send · Shift+Enter for a new line");
    if (!to.length) hint = gettext("Pick at least one recipient");
    else if (length > MAX_CHARACTERS) hint = gettext("The message is too long");
    this.hint.textContent = hint;
    const names = this.recipientNames();
    this.input.placeholder = names ? format(gettext("Message %(names)s…"), { names }) : gettext("Pick a recipient first…");
    this.send.textContent = names ? format(gettext("Send to %(names)s"), { names }) : gettext("Send");
    if (this.toSummary) {
      this.toSummary.textContent = names ? format(gettext("To: %(names)s"), { names }) : gettext("To: nobody");
    }
    this.send.disabled = this.sending || !to.length || !this.input.value.trim() || length > MAX_CHARACTERS;
  }

  /** Room agents named as "@Name" in the text who are not among the recipients. */
  unaddressedMentions() {
    if (this.all) return [];
    const text = this.input.value.toLowerCase();
    return this.agents.filter((a) => !this.picked.has(a.actorId) && mentions(text, a.displayName));
  }

  warnAboutMentions(agents) {
    const names = agents.map((a) => `@${a.displayName}`).join(", ");
    this.mentionWarning.querySelector(".mention-warning-text").textContent = format(ngettext(
      "%(names)s is mentioned but not addressed: the message goes only to %(recipients)s.",
      "%(names)s are mentioned but not addressed: the message goes only to %(recipients)s.", agents.length),
    { names, recipients: this.recipientNames() });
    const adds = agents.map((a) => h("button", { type: "button", class: "mention-add",
      text: format(gettext("Add %(name)s"), { name: a.displayName }),
      onclick: () => {
        this.choose(a.actorId, true);
        this.input.focus();
      } }));
    this.mentionWarning.querySelector(".mention-adds").replaceChildren(...adds);
    this.mentionWarning.hidden = false;
  }

  hideMentionWarning() {
    if (this.mentionWarning) this.mentionWarning.hidden = true;
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
    const unaddressed = this.mentionWarning ? this.unaddressedMentions() : [];
    if (unaddressed.length && this.mentionsAccepted !== key) {
      this.warnAboutMentions(unaddressed);
      return;
    }
    this.hideMentionWarning();
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
      this.failed = { id, key, code: reply.error.code };
      this.showError(reply.error);
    }
    this.refresh();
  }

  /** The stream is back: a send that failed on the network goes again under its own id (the
   * server answers a repeat with the stored receipt, so nothing is posted twice). */
  streamBack() {
    if (!this.failed || this.failed.code !== "NETWORK_ERROR" || this.sending) return;
    if (JSON.stringify(this.payload()) !== this.failed.key) return; // edited since: the user decides
    this.mentionsAccepted = this.failed.key; // it was already past any warning
    this.submit();
  }
}

/** Whether ``text`` (lower case) names ``displayName`` as "@Name", not as part of a longer word. */
function mentions(text, displayName) {
  const needle = `@${displayName.toLowerCase()}`;
  for (let at = text.indexOf(needle); at !== -1; at = text.indexOf(needle, at + 1)) {
    const before = at === 0 ? " " : text[at - 1];
    const after = text[at + needle.length] || " ";
    if (!/[\p{L}\p{N}_]/u.test(before) && !/[\p{L}\p{N}_]/u.test(after)) return true;
  }
  return false;
}
