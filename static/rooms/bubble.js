// bubble.js — one timeline message, and the live bubble of an agent's Turn.
//
// A TurnBubble is keyed by turnId. It is created by turn.started (or the first live delta, or,
// after a refresh, by the Turn's first durable record), collects streamed text, reasoning and
// tool lines, and on message.created becomes the final reply *in place*, so a reply is never
// shown twice. Author names come from envelope.actor only, never from the text.

import { avatarInitials } from "./avatars.js";
import { clockTime, excerpt, h, replaceChildren, tintFor } from "./dom.js";
import { format, gettext } from "./i18n.js";
import { LiveMarkdown } from "./live_markdown.js";
import { renderRichText } from "./richtext.js";

const REASONING_LIMIT = 20_000; // characters kept on screen; the record itself is never trimmed
const TOOL_VALUE_LIMIT = 300;
const TOOL_DETAILS_LIMIT = 1_500;
const TERMINAL_TOOL = new Set(["done", "failed", "cancelled"]);

const END_NOTES = {
  failed: gettext("Failed"),
  cancelled: gettext("Cancelled"),
  interrupted: gettext("Interrupted"),
};
// A Turn's and a tool call's state on its badge, in words (the data-status keeps the code).
const STATUS_WORDS = {
  dispatching: gettext("starting"), running: gettext("working"), cancelling: gettext("cancelling…"),
  queued: gettext("queued"), failed: gettext("failed"), cancelled: gettext("cancelled"),
  interrupted: gettext("interrupted"), done: gettext("done"), stopped: gettext("stopped"),
};
const TOOL_WORDS = { ...STATUS_WORDS, running: gettext("running") };

/** The skeleton shared by every message: avatar, header, reference, body, chips, actions. */
function shell(actor, kind, occurredAt) {
  const avatar = tintFor(h("span", { class: "avatar", "aria-hidden": "true",
    text: avatarInitials(actor.actorId, actor.displayName) }), actor.actorId);
  const author = tintFor(h("span", { class: "msg-author", text: shownName(actor) }), actor.actorId);
  const time = h("time", { class: "msg-time", datetime: occurredAt || null, text: occurredAt ? clockTime(occurredAt) : "" });
  const badge = h("span", { class: "msg-badge", hidden: true });
  const actions = h("div", { class: "msg-actions" });
  const head = h("header", { class: "msg-head" }, author, time, badge, actions);
  const ref = h("div", { class: "msg-refs" });
  const body = h("div", { class: "msg-body" });
  const chips = h("div", { class: "turn-chips", role: "list", "aria-label": gettext("Recipients and their Turns") });
  const main = h("div", { class: "msg-main" }, head, ref, body, chips);
  const el = h("article", { class: `msg msg--${kind}`, dataset: { actorId: actor.actorId } }, avatar, main);
  tintFor(el, actor.actorId);
  return { el, head, time, badge, ref, body, chips, actions, main };
}

/** The reply / forward quotes, read from the referenced envelope (PROTOCOL §4.2). */
export function referenceBlock(kind, reference) {
  const forward = kind === "forward";
  // A reply is marked by an arrow (read out as "In reply to"); a forward says so in words.
  const label = forward
    ? h("span", { class: "ref-label", text: gettext("Forwarded from") })
    : h("span", { class: "ref-label ref-label--icon", "aria-label": gettext("In reply to"), title: gettext("In reply to"),
      text: "↩" });
  if (!reference) {
    return h("div", { class: `ref ref--${kind}` }, label,
      h("span", { class: "ref-text", text: gettext("an earlier message") }));
  }
  const author = tintFor(h("span", { class: "ref-author", text: shownName(reference.actor) }), reference.actor.actorId);
  return h("div", { class: `ref ref--${kind}`, dataset: { refEventId: reference.eventId } },
    label, author, h("span", { class: "ref-text", text: excerpt(reference.body && reference.body.content) }));
}

/** The person at this page is "You" in the reader's language; everyone else by their name. */
function shownName(actor) {
  return actor.actorId === "user:web" ? gettext("You") : actor.displayName || actor.actorId;
}

/** "Kimi at 14:05", a message's name for assistive technology. */
function atTime(envelope) {
  return format(gettext("%(name)s at %(time)s"), { name: shownName(envelope.actor), time: clockTime(envelope.occurredAt) });
}

function actionButtons(envelope, ctx) {
  const who = shownName(envelope.actor);
  return [
    h("button", { type: "button", class: "link-btn", "aria-label": format(gettext("Reply to %(name)s"), { name: who }),
      text: gettext("Reply"), onclick: () => ctx.onReply(envelope) }),
    h("button", { type: "button", class: "link-btn", text: gettext("Forward"),
      "aria-label": format(gettext("Forward %(name)s's message"), { name: who }),
      onclick: () => ctx.onForward(envelope) }),
  ];
}

function fillReferences(parts, envelope, ctx, { skipReply = false } = {}) {
  parts.ref.replaceChildren();
  if (envelope.forwardedEventId) parts.ref.append(referenceBlock("forward", ctx.refFor(envelope.forwardedEventId)));
  if (envelope.replyToEventId && !skipReply) parts.ref.append(referenceBlock("reply", ctx.refFor(envelope.replyToEventId)));
}

/** A message.created that is not an agent's Turn reply (a user message, an agent's own post). */
export function messageElement(envelope, ctx) {
  const kind = envelope.actor.kind === "user" ? "user" : "agent";
  const parts = shell(envelope.actor, kind, envelope.occurredAt);
  Object.assign(parts.el.dataset, { eventId: envelope.eventId, seq: String(envelope.seq) });
  parts.el.setAttribute("aria-label", atTime(envelope));
  fillReferences(parts, envelope, ctx);
  parts.body.append(renderRichText(envelope.body && typeof envelope.body.content === "string" ? envelope.body.content : ""));
  parts.actions.append(...actionButtons(envelope, ctx));
  return { el: parts.el, chips: parts.chips };
}

function toolState(body) {
  const status = String((body.details && body.details.status) || "").toLowerCase();
  if (["failed", "error", "errored"].includes(status)) return "failed";
  if (["cancelled", "canceled", "interrupted"].includes(status)) return "cancelled";
  if (body.nativeType === "tool.completed" || ["completed", "done", "success", "succeeded"].includes(status)) return "done";
  return "running";
}

function toolName(details) {
  for (const key of ["name", "title", "kind"]) {
    if (details && typeof details[key] === "string" && details[key].trim()) return excerpt(details[key], 120);
  }
  return "tool";
}

/** The structured details as short key/value lines; never a raw JSON card (FEATURES §17). */
function toolDetails(details) {
  const list = h("dl", { class: "tool-details" });
  let budget = TOOL_DETAILS_LIMIT;
  for (const [key, raw] of Object.entries(details || {})) {
    if (budget <= 0) {
      list.append(h("dt", { text: "…" }), h("dd", { text: gettext("details shortened") }));
      break;
    }
    let value = typeof raw === "string" ? raw : JSON.stringify(raw);
    value = excerpt(value, Math.min(TOOL_VALUE_LIMIT, budget));
    budget -= value.length;
    list.append(h("dt", { text: key }), h("dd", { text: value }));
  }
  return list;
}

export class TurnBubble {
  constructor({ turnId, actor, sourceEventId, occurredAt }, ctx) {
    this.turnId = turnId;
    this.actor = actor;
    this.sourceEventId = sourceEventId;
    this.threadOf = null; // the prompt whose thread holds this bubble (threads.js): no quote of it
    this.ctx = ctx;
    this.state = "live"; // live → final | ended
    this.lastChunk = -1;
    this.streamed = "";
    this.tools = new Map();
    this.anonymousTools = 0;
    this.parts = shell(actor, "agent", occurredAt);
    const { el, ref, body, badge } = this.parts;
    el.classList.add("msg--turn", "is-live");
    el.dataset.turnId = turnId;
    el.setAttribute("aria-label", format(gettext("%(name)s, working"), { name: actor.displayName }));
    if (sourceEventId) ref.append(referenceBlock("reply", ctx.refFor(sourceEventId)));
    this.reasoning = null;
    this.toolList = h("ul", { class: "tools", "aria-label": gettext("Tool calls"), hidden: true });
    this.text = h("div", { class: "stream-text", "aria-busy": "true" });
    this.liveText = new LiveMarkdown(this.text, () => ctx.onGrow && ctx.onGrow());
    this.typing = h("span", { class: "typing", "aria-label": gettext("working") }, h("i"), h("i"), h("i"));
    this.note = h("p", { class: "msg-note", hidden: true });
    body.before(this.toolList);
    body.append(this.text, this.typing);
    body.after(this.note);
    badge.hidden = false;
    this.stop = h("button", { type: "button", class: "stop-btn", text: gettext("Stop"), onclick: () => ctx.onCancel(turnId),
      "aria-label": format(gettext("Stop %(name)s's Turn"), { name: actor.displayName }) });
    this.parts.actions.before(this.stop);
    this.setStatus("running");
  }

  get el() {
    return this.parts.el;
  }

  /** running | dispatching | cancelling, while live. */
  setStatus(status) {
    if (this.state !== "live") return;
    this.parts.badge.textContent = STATUS_WORDS[status] || status;
    this.parts.badge.dataset.status = status;
    this.stop.hidden = status === "cancelling";
  }

  /** Append streamed text (already batched by the timeline). */
  appendText(text, firstChunkIndex) {
    if (!this.streamed && firstChunkIndex > 0 && !this.joinedLate) {
      // Deltas are transient: what streamed before this page connected is not replayed.
      this.joinedLate = true;
      this.text.before(h("p", { class: "joined-late",
        text: gettext("… earlier output streamed before this page connected; the full reply appears when the Turn completes.") }));
    }
    this.streamed += text;
    this.liveText.set(this.streamed);
    this.typing.hidden = true;
    this.doneThinking();
  }

  ensureReasoning() {
    if (!this.reasoning) {
      const text = h("div", { class: "reasoning-text" });
      const label = h("span", { class: "reasoning-label", text: gettext("Thinking…") });
      const el = h("details", { class: "reasoning" }, h("summary", {}, label), text);
      this.parts.ref.after(el);
      this.reasoning = { el, text, label, chars: 0 };
    }
    return this.reasoning;
  }

  /** Once the agent writes or runs a tool, its reasoning so far is no longer "in progress". */
  doneThinking() {
    if (this.reasoning) this.reasoning.label.textContent = gettext("Reasoning");
  }

  appendReasoning(text) {
    const r = this.ensureReasoning();
    if (r.chars >= REASONING_LIMIT) return;
    const piece = text.slice(0, REASONING_LIMIT - r.chars);
    r.chars += piece.length;
    r.text.append(document.createTextNode(piece));
  }

  /** turn.reasoning.recorded replaces whatever streamed: the record is the complete text. */
  setReasoning(content) {
    const r = this.ensureReasoning();
    const text = String(content || "");
    r.text.textContent = text.length > REASONING_LIMIT ? text.slice(0, REASONING_LIMIT) + "\n…" : text;
    r.chars = Math.min(text.length, REASONING_LIMIT);
    r.label.textContent = gettext("Reasoning");
  }

  /** tool.progress / tool.progress.recorded, merged by turnId + toolCallId into one line. */
  tool(body) {
    let key = body.toolCallId;
    if (!key) {
      // Without a native id a completion closes the oldest running line of the same name.
      const name = toolName(body.details);
      const open = [...this.tools.values()].find((t) => t.anonymous && t.name === name && t.status === "running");
      key = open ? open.key : `anon-${this.anonymousTools++}`;
    }
    let line = this.tools.get(key);
    if (!line) {
      const name = h("span", { class: "tool-name" });
      const status = h("span", { class: "tool-status" });
      const details = h("div", { class: "tool-more" });
      const el = h("li", { class: "tool", dataset: { toolCallId: key } },
        h("details", {}, h("summary", {}, h("span", { class: "tool-icon", "aria-hidden": "true" }), name, status), details));
      line = { key, el, nameEl: name, statusEl: status, detailsEl: details, status: "running", anonymous: !body.toolCallId };
      this.tools.set(key, line);
      this.toolList.append(line.el);
      this.toolList.hidden = false;
    }
    this.doneThinking();
    const next = toolState(body);
    // A replayed "started" record must not reopen a line the live stream already closed.
    if (!(TERMINAL_TOOL.has(line.status) && next === "running")) line.status = next;
    line.name = toolName(body.details);
    line.nameEl.textContent = line.name;
    line.statusEl.textContent = TOOL_WORDS[line.status] || line.status;
    line.el.dataset.status = line.status;
    replaceChildren(line.detailsEl, toolDetails(body.details));
  }

  hasContent() {
    return Boolean(this.streamed || this.reasoning || this.tools.size || this.state === "final");
  }

  /** What the agent is doing right now, for the sidebar. */
  activity() {
    if (this.state !== "live") return null;
    const running = [...this.tools.values()].reverse().find((t) => t.status === "running");
    if (running) return format(gettext("Running %(tool)s"), { tool: running.name });
    if (this.streamed) return gettext("Writing a reply");
    if (this.reasoning) return gettext("Thinking");
    return gettext("Working");
  }

  /** message.created with this turnId: the streamed text becomes the final reply. */
  finalize(envelope) {
    const { el, body, badge, actions, ref, time } = this.parts;
    this.state = "final";
    this.liveText.stop();
    this.finishTools("done");
    el.classList.remove("is-live");
    Object.assign(el.dataset, { eventId: envelope.eventId, seq: String(envelope.seq) });
    el.setAttribute("aria-label", atTime(envelope));
    time.dateTime = envelope.occurredAt;
    time.textContent = clockTime(envelope.occurredAt);
    // Under its prompt (threads.js) the "↩ prompt" quote would repeat what is right above.
    const underPrompt = Boolean(this.threadOf) && envelope.replyToEventId === this.threadOf;
    fillReferences({ ref }, envelope, this.ctx, { skipReply: underPrompt });
    if (this.reasoning) ref.after(this.reasoning.el);
    this.doneThinking();
    replaceChildren(body, renderRichText(envelope.body && typeof envelope.body.content === "string" ? envelope.body.content : ""));
    badge.hidden = true;
    this.stop.remove();
    actions.replaceChildren(...actionButtons(envelope, this.ctx));
  }

  /** A terminal event without a reply (failed, cancelled, interrupted): keep what streamed. */
  end(status, errorCode) {
    if (this.state === "final") return;
    this.state = "ended";
    if (this.streamed) this.liveText.render();
    this.finishTools("cancelled");
    const { el, badge } = this.parts;
    el.classList.remove("is-live");
    el.classList.add("is-ended");
    el.dataset.status = status;
    this.typing.hidden = true;
    this.text.removeAttribute("aria-busy");
    this.stop.remove();
    badge.textContent = errorCode ? `${STATUS_WORDS[status] || status} · ${errorCode}` : STATUS_WORDS[status] || status;
    badge.dataset.status = status;
    this.doneThinking();
    this.note.hidden = false;
    const ended = END_NOTES[status] || status;
    this.note.textContent = this.streamed
      ? format(gettext("%(ended)s — this is the partial reply that streamed before the Turn ended."), { ended })
      : format(gettext("%(ended)s before a reply was written."), { ended });
  }

  finishTools(fallback) {
    for (const line of this.tools.values()) {
      if (line.status !== "running") continue;
      line.status = fallback === "done" ? "done" : "stopped";
      line.statusEl.textContent = TOOL_WORDS[line.status];
      line.el.dataset.status = line.status;
    }
    this.text.removeAttribute("aria-busy");
    this.typing.hidden = true;
  }
}
