// assistant_panel.js — the private side chat with the room assistant (FEATURES §13, PROTOCOL §10.7).
//
// Beside the timeline on a wide screen, a bottom sheet on a phone; collapsible either way. Nothing
// said here is a room message: it goes to /api/assistant/messages only, and what the assistant
// does to the room (an operator.dispatch, say) reaches the timeline by the room's own stream.
// A send gets a fresh clientCommandId; a retry of the failed send reuses it, so a request that
// reached the server is joined or replayed there, never run twice. The POST answers with the reply
// (the brain's run can take minutes): until then the chat says "thinking" and offers Stop.
//
// What it reads and sends is named by its schema in /api/openapi.json (docs/DECISIONS.md D34, D49):
/**
 * @typedef {object} AssistantState             #/components/schemas/AssistantState
 * @typedef {object} SideMessages               #/components/schemas/SideMessages
 * @typedef {object} SideMessageOut             #/components/schemas/SideMessageOut
 * @typedef {object} SideMessageBody            #/components/schemas/SideMessageBody
 * @typedef {object} SideMessageAnswer          #/components/schemas/SideMessageAnswer
 * @typedef {object} SideCancelBody             #/components/schemas/SideCancelBody
 * @typedef {object} SideCancelAnswer           #/components/schemas/SideCancelAnswer
 */

import { postJson } from "./api.js";
import { MAX_CHARACTERS, sendOnEnter } from "./composer.js";
import { clockTime, codePoints, h, newCommandId, replaceChildren } from "./dom.js";
import { format, gettext } from "./i18n.js";
import { renderRichText } from "./richtext.js";
import { loadSetting, saveSetting } from "./storage.js";

const OPEN_KEY = "groupx.assistant.open";
const POLL_MS = { starting: 1_000, busy: 3_000 }; // status while it may change soon; else on open and reconnect
const STATUS_TEXT = { disabled: gettext("off"), starting: gettext("starting"), ready: gettext("ready"),
  busy: gettext("busy"), failed: gettext("failed"), restart_required: gettext("restart required") };
const PHONE = matchMedia("(max-width: 760px)");
const ROOMY = matchMedia("(min-width: 1100px)"); // room for the timeline beside the agents and the panel

/** GET JSON as {ok, status, data} (a missing backend is a 404, not an exception). */
async function read(url) {
  try {
    const response = await fetch(url, { headers: { Accept: "application/json" }, cache: "no-store" });
    return { ok: response.ok, status: response.status, data: response.ok ? await response.json() : null };
  } catch {
    return { ok: false, status: 0, data: null };
  }
}

export class AssistantPanel {
  /** @param el {panel, toggle, collapse, title, status, detail, log, form, input, sendButton, stopButton, error} */
  constructor(el) {
    Object.assign(this, el);
    this.state = null; // the last AssistantState
    this.loaded = false; // the history has been read
    this.inFlight = null; // {clientCommandId, content, row} of the send waiting for its reply
    this.failed = null; // {clientCommandId, content, row} of the last send that did not get through
    this.rows = new Map(); // messageId → row
    this.pollTimer = null;
    this.toggle.addEventListener("click", () => this.setOpen(this.panel.hidden));
    this.collapse.addEventListener("click", () => this.close());
    this.panel.addEventListener("keydown", (event) => {
      if (event.key === "Escape" && PHONE.matches) this.close(); // a sheet closes like a dialog
    });
    sendOnEnter(this.form, this.input, () => this.submit());
    this.input.addEventListener("input", () => this.refreshControls());
    this.stopButton.addEventListener("click", () => this.cancel());
    this.error.querySelector(".retry").addEventListener("click", () => this.retry());
    PHONE.addEventListener("change", () => this.setOpen(this.isOpen && !PHONE.matches, { remember: false }));
    this.refreshControls();
  }

  get isOpen() {
    return !this.panel.hidden;
  }

  /** Read the status once: the toggle appears only when the server has an assistant to talk to. */
  async start() {
    await this.refreshStatus();
    if (!this.state) return;
    this.toggle.hidden = false;
    // Open by default on a wide screen when it is enabled; a phone opens the sheet on demand.
    const choice = loadSetting(OPEN_KEY);
    const open = choice === null ? this.state.enabled && ROOMY.matches : choice === "true" && !PHONE.matches;
    this.setOpen(open, { remember: false });
  }

  setOpen(open, { remember = true } = {}) {
    this.panel.hidden = !open;
    document.body.classList.toggle("assistant-open", open);
    this.toggle.setAttribute("aria-expanded", String(open));
    if (remember) saveSetting(OPEN_KEY, String(open));
    if (!open) return;
    this.refreshStatus();
    if (!this.loaded) this.loadHistory();
    if (remember) this.input.focus();
  }

  /** Fold it by hand: the focus goes back to the toggle that opens it again. */
  close() {
    this.setOpen(false);
    this.toggle.focus();
  }

  // ---- status -----------------------------------------------------------------------------------

  async refreshStatus() {
    clearTimeout(this.pollTimer);
    const reply = await read("/api/assistant");
    if (reply.ok) this.showStatus(/** @type {AssistantState} */ (reply.data));
    else if (this.state) {
      const detail = reply.status ? format(gettext("GET /api/assistant answered HTTP %(status)s"), { status: reply.status })
        : gettext("GroupX could not be reached");
      this.showStatus({ ...this.state, status: "failed", detail });
    }
  }

  showStatus(state) {
    this.state = state;
    const status = state.status;
    this.title.textContent = state.name || gettext("Assistant");
    this.toggle.dataset.status = status;
    this.status.dataset.status = status;
    this.status.querySelector(".assistant-status-text").textContent = STATUS_TEXT[status] || status;
    this.toggle.title = `${this.title.textContent}: ${STATUS_TEXT[status] || status}`;
    if (status === "disabled" && !state.detail) {
      // The link sits where the translated sentence puts it.
      const [before, after] = gettext("The assistant is off. Turn it on in %(settings)s, then restart GroupX.")
        .split("%(settings)s");
      replaceChildren(this.detail, before, h("a", { href: "/setup", text: gettext("Agent settings") }), after);
    } else {
      this.detail.textContent = state.detail || "";
    }
    this.detail.hidden = !this.detail.textContent;
    this.refreshControls();
    clearTimeout(this.pollTimer);
    // Starting is watched even while folded (the toggle's dot says when it is ready); busy only open.
    const poll = status === "starting" || this.isOpen ? POLL_MS[status] : 0;
    if (poll) this.pollTimer = setTimeout(() => this.refreshStatus(), poll);
  }

  // ---- history ----------------------------------------------------------------------------------

  async loadHistory() {
    const reply = await read("/api/assistant/messages");
    if (!reply.ok) return;
    this.loaded = true;
    const messages = /** @type {SideMessages} */ (reply.data).messages || [];
    for (const message of messages) this.showMessage(message);
    this.scrollToEnd();
    // A reload in the middle of a run: the last question is still being answered. Posting it
    // again under its own clientCommandId joins that run (never a second row, never a second run).
    const last = messages.at(-1);
    if (last && last.role === "user" && last.clientCommandId && this.state && this.state.status === "busy"
        && !this.inFlight) {
      this.send({ clientCommandId: last.clientCommandId, content: last.content, row: this.rows.get(last.messageId) });
    }
  }

  /** One stored row (user or assistant), placed once: a replayed reply never shows twice. */
  showMessage(message, row = null) {
    const existing = this.rows.get(message.messageId);
    if (existing) {
      if (row && row !== existing) row.remove();
      existing.dataset.state = "stored";
      return existing;
    }
    const item = row || this.row(message.role, message.content);
    item.dataset.messageId = message.messageId;
    item.dataset.state = "stored";
    const time = item.querySelector("time");
    time.dateTime = message.createdAt;
    time.textContent = clockTime(message.createdAt);
    this.rows.set(message.messageId, item);
    if (!item.isConnected) this.log.append(item);
    return item;
  }

  row(role, content) {
    const who = role === "user" ? gettext("You") : (this.state && this.state.name) || gettext("Assistant");
    return h("li", { class: `assistant-msg assistant-msg--${role}`, dataset: { role } },
      h("div", { class: "assistant-msg-head" }, h("strong", { text: who }), h("time", { class: "assistant-msg-time" })),
      h("div", { class: "assistant-msg-body msg-body" }, renderRichText(content)));
  }

  // ---- sending ----------------------------------------------------------------------------------

  submit() {
    const content = this.input.value.trim();
    if (!content || this.inFlight || codePoints(content) > MAX_CHARACTERS) return;
    const row = this.row("user", content);
    row.dataset.state = "sending";
    this.log.append(row);
    this.input.value = "";
    this.send({ clientCommandId: newCommandId(), content, row });
  }

  /** The failed send again, under the same clientCommandId (the server joins or replays it). */
  retry() {
    if (this.failed && !this.inFlight) this.send(this.failed);
  }

  async send(pending) {
    this.inFlight = pending;
    this.failed = null;
    this.error.hidden = true;
    pending.row.dataset.state = "sending";
    const thinking = h("li", { class: "assistant-msg assistant-msg--assistant assistant-thinking", role: "status" },
      h("span", { class: "assistant-dots", "aria-hidden": "true" }),
      format(gettext("%(name)s is thinking…"), { name: this.title.textContent }));
    this.log.append(thinking);
    this.scrollToEnd();
    // The brain is busy with it now; the status poll confirms (and the answer brings the next one).
    if (this.state) this.showStatus({ ...this.state, status: "busy", detail: null });
    this.refreshControls();
    let reply;
    for (;;) {
      reply = await postJson("/api/assistant/messages",
        /** @type {SideMessageBody} */ ({ clientCommandId: pending.clientCommandId, content: pending.content }));
      if (!reply.ok) break;
      const data = /** @type {SideMessageAnswer} */ (reply.data);
      this.showMessage(data.userMessage, pending.row);
      if (data.status && this.state) this.showStatus({ ...this.state, status: data.status, detail: data.detail });
      if (data.assistantMessage) {
        this.showMessage(data.assistantMessage);
        break;
      }
      // A long run answers "still answering" without the reply: the same id joins it again.
    }
    thinking.remove();
    this.inFlight = null;
    if (!reply.ok) {
      this.failed = pending;
      pending.row.dataset.state = "failed";
      this.showError(gettext("Not sent:"), reply.error);
      this.refreshStatus(); // SESSION_NOT_AVAILABLE and friends: say why in the header too
    }
    this.scrollToEnd();
    this.refreshControls();
  }

  async cancel() {
    const pending = this.inFlight;
    if (!pending) return;
    this.stopButton.disabled = true;
    this.stopButton.textContent = gettext("Stopping…");
    const reply = await postJson("/api/assistant/cancel",
      /** @type {SideCancelBody} */ ({ clientCommandId: pending.clientCommandId }));
    if (!reply.ok && this.inFlight === pending) this.showError(gettext("Not stopped:"), reply.error);
    // Either way the send's own answer ends the wait (with the stored failure if it was stopped).
    this.refreshControls();
  }

  /** A refusal with its code (ErrorBody's error), under the box; Retry shows when a send failed. */
  showError(lead, error) {
    this.error.querySelector(".error-lead").textContent = lead;
    this.error.querySelector(".error-code").textContent = error.code;
    this.error.querySelector(".error-message").textContent = error.message;
    this.error.hidden = false;
  }

  refreshControls() {
    const status = this.state ? this.state.status : "disabled";
    // The server decides (SESSION_NOT_AVAILABLE while starting, shown with its code); off is plain.
    const usable = status !== "disabled";
    const content = this.input.value.trim();
    this.sendButton.disabled = Boolean(this.inFlight) || !usable || !content || codePoints(content) > MAX_CHARACTERS;
    this.input.disabled = status === "disabled";
    this.stopButton.hidden = !this.inFlight;
    this.sendButton.hidden = Boolean(this.inFlight); // Stop takes its place while a run is in flight
    if (!this.inFlight) {
      this.stopButton.disabled = false;
      this.stopButton.textContent = gettext("Stop");
    }
    this.error.querySelector(".retry").hidden = !this.failed || Boolean(this.inFlight);
    this.log.setAttribute("aria-busy", String(Boolean(this.inFlight)));
  }

  scrollToEnd() {
    this.log.scrollTop = this.log.scrollHeight;
  }
}
