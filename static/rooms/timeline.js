// timeline.js — the centre column: durable history in seq order, live Turns below it.
//
// Two zones: #durable holds items in the order their durable events arrived (which is seq order,
// because bootstrap and the stream both deliver in seq order); #live holds the bubbles of Turns
// that are still working. A live bubble moves to the end of #durable when its first durable
// record arrives (reasoning, tool records, reply or terminal event all commit together), so the
// page after a refresh shows exactly what it showed live, minus the transient deltas.

import { clockTime, excerpt, h, replaceChildren, tintFor } from "./dom.js";
import { detailsOf, errorSentence, kindName } from "./event_sentences.js";
import { messageElement, TurnBubble } from "./bubble.js";
import { format, gettext } from "./i18n.js";
import { PairGroups } from "./supervision.js";
import { renderChip } from "./chips.js";
import { appendNewer, itemCount, MAX_ITEMS, prependOlder, showWindow, TRIM_BATCH } from "./paging.js";
import { groupByAuthor, Threads } from "./threads.js";
import { TERMINAL } from "./turns.js";

const DELTA_BATCH_MS = 32;
const FOLLOW_PAUSE_MS = 15_000;
const MAX_REFERENCES = 2_000; // envelopes kept for reply/forward quotes after their items are trimmed
// Reserved namespaces, never rendered: from bootstrap's eventTypes (rooms/event_types.py), not a copy.
let hiddenPrefixes = [];

const SESSION_TEXT = {
  "session.starting": gettext("starting"),
  "session.ready": gettext("ready"),
  "session.resumed": gettext("resumed its session"),
  "session.failed": gettext("failed to start"),
  "session.stopped": gettext("session stopped"),
};
// Why a session closed (agents/sessions.py), in words; another reason is shown as it came, under details.
const STOP_REASONS = {
  rebuild: gettext("closed to be started again"),
  restart: gettext("its CLI was restarted"),
  context_reset: gettext("a fresh session after the context reset"),
};
const TERMINAL_TEXT = {
  failed: gettext("Turn failed"), cancelled: gettext("Turn cancelled"), interrupted: gettext("Turn interrupted"),
};

/** A session row in words: "failed to start: its CLI could not be started", never a bare code. */
function sessionSentence(type, body) {
  const said = SESSION_TEXT[type] || type.slice(8);
  if (type === "session.failed") return format(gettext("%(state)s: %(why)s"), { state: said, why: lowerFirst(errorSentence(body.errorCode)) });
  if (type === "session.ready" && body.resumeErrorCode) return gettext("ready on a fresh session: its earlier one could not be continued");
  if (type === "session.stopped" && STOP_REASONS[body.reason]) return format(gettext("%(state)s: %(why)s"), { state: said, why: STOP_REASONS[body.reason] });
  return said;
}

/** The codes and the server's own words behind a session row, folded under "details". */
function sessionDetails(type, body) {
  const code = body.errorCode || body.resumeErrorCode || null;
  const unexplained = body.reason && !(type === "session.stopped" && STOP_REASONS[body.reason]) ? body.reason : null;
  return detailsOf(code, [body.message, unexplained].filter(Boolean).join(" — ") || null);
}

function lowerFirst(text) {
  return `${text.charAt(0).toLowerCase()}${text.slice(1)}`;
}

export function isHidden(type) {
  return hiddenPrefixes.some((prefix) => type.startsWith(prefix));
}

/** Bootstrap's eventTypes: read before any event is applied (room.js bootOnce). */
export function setEventTypes(eventTypes) {
  hiddenPrefixes = (eventTypes && eventTypes.forbiddenPrefixes) || hiddenPrefixes;
}

export class Timeline {
  /**
   * @param elements {scroller, durable, live, jump}
   * @param ctx {turns, agentActor(actorId), onReply(env), onForward(env), onCancel(turnId), onActivity(actorId),
   *   onLatest() (leave a window of old events: rebuild from a fresh bootstrap), renderers (type → fn(this, env))}
   */
  constructor(elements, ctx) {
    Object.assign(this, elements);
    this.ctx = ctx;
    this.bubbleCtx = {
      refFor: (eventId) => this.refs.get(eventId) || null,
      onReply: ctx.onReply,
      onForward: ctx.onForward,
      onCancel: ctx.onCancel,
      onGrow: () => this.changed(), // a live bubble drew more text: keep following the newest line
    };
    this.pausedAt = 0;
    this.renderQueued = false;
    for (const type of ["wheel", "touchstart", "pointerdown", "keydown"]) {
      // Any hand in the list means the user is reading: stop following for 15 s.
      this.scroller.addEventListener(type, () => { this.pausedAt = Date.now(); }, { passive: true });
    }
    this.scroller.addEventListener("scroll", () => { if (this.atBottom() && !this.detached) this.jump.hidden = true; },
      { passive: true });
    this.jump.addEventListener("click", () => this.follow());
    this.reset();
  }

  reset({ hasOlder = false } = {}) {
    clearTimeout(this.flushTimer);
    this.flushTimer = null;
    this.pending = new Map(); // turnId → {text, reasoning, firstChunk}
    this.lastChunk = new Map(); // turnId → highest content chunkIndex applied
    this.seen = new Set(); // durable eventIds rendered (never render one twice)
    this.refs = new Map(); // eventId → message envelope, for quotes
    this.chipRows = new Map(); // source eventId → chips container
    this.chips = new Map(); // turnId → chip element
    this.bubbles = new Map(); // turnId → TurnBubble
    this.pairs = new PairGroups(this); // supervision pairs, each one group (supervision.js)
    this.threads = new Threads(this); // each prompt's replies under it (threads.js)
    this.lastOwn = null; // the user's newest message envelope (Up-arrow in the composer recalls it)
    this.durable.replaceChildren();
    this.orphans = h("div", { class: "turn-chips turn-chips--orphan", role: "list", hidden: true,
      "aria-label": gettext("Turns of earlier messages") });
    this.live.replaceChildren(this.orphans);
    this.jump.hidden = true;
    this.live.hidden = false;
    // The history below floorSeq is not on the page; history.js reads older pages from there.
    this.hasOlder = hasOlder;
    this.floorSeq = Infinity;
    this.ceilingSeq = 0; // the newest seq on the page; a detached window reads newer pages from there
    this.appending = false; // while a newer page renders below a detached window
    this.unreadAfter = null; // the "New messages" divider goes above the first message after this seq
    this.divider = null;
    this.applyingSeq = null;
    this.prepending = null; // while an older page renders: {home, created}
    this.detached = false; // showing a window of old events instead of the room's newest end
  }

  /** Show a window of old events (a search hit far back, a date) instead of the newest end (paging.js). */
  showWindow(envs, { hasOlder }) {
    showWindow(this, envs, { hasOlder });
  }

  // ---- durable events -----------------------------------------------------------------------

  /** One durable envelope, in seq order. Turn statuses are already applied to ctx.turns. */
  applyDurable(env) {
    if (this.detached && !this.prepending && !this.appending) return; // the newest end is not on the page
    if (!this.prepending && Number.isInteger(env.seq) && env.seq < this.floorSeq) this.floorSeq = env.seq;
    if (Number.isInteger(env.seq) && env.seq > this.ceilingSeq) this.ceilingSeq = env.seq;
    if (isHidden(env.type) || this.seen.has(env.eventId)) return;
    this.seen.add(env.eventId);
    this.applyingSeq = env.seq;
    this.flush(); // streamed text first, so a terminal event never lands before its last words
    const body = env.body || {};
    const type = env.type;
    if (type === "message.created") this.message(env);
    else if (type === "turn.started") this.liveBubble(body.turnId, env.actor);
    else if (type === "turn.reasoning.recorded") this.settledBubble(body.turnId, env).setReasoning(body.content);
    else if (type === "tool.progress.recorded") this.settledBubble(body.turnId, env).tool(body);
    else if (TERMINAL.has(type.slice(5)) && type.startsWith("turn.")) this.terminal(env);
    else if (type === "turn.queued" || type === "turn.dispatched") return; // shown by the chips
    else if (type.startsWith("session.")) this.session(env);
    else if (this.ctx.renderers?.has(type)) this.ctx.renderers.get(type)(this, env); // before memoryLine
    else if (type.startsWith("memory.") && body.record) this.memoryLine(env);
    else if (type.startsWith("supervision.")) this.pairs.apply(env);
    else (this.ctx.renderers?.get(type) || ((timeline, e) => timeline.generic(e)))(this, env);
    this.changed();
  }

  /** An older page above what is shown (paging.js). */
  prepend(envs, { hasOlder }) {
    prependOlder(this, envs, { hasOlder });
  }

  /** A newer page below a detached window (paging.js). */
  append(envs) {
    appendNewer(this, envs);
  }

  message(env) {
    this.remember(env);
    // A Turn's reply is written by the adapter (lifecycle.finish); anything else an agent posts
    // during its Turn (a future MCP publish, say) is a message of its own, never the reply.
    const turnId = env.body && env.body.turnId;
    const source = env.provenance && env.provenance.sourceKind;
    const done = turnId && this.bubbles.has(turnId) && this.bubbles.get(turnId).state === "final";
    if (turnId && env.actor.kind === "agent" && (!source || source === "adapter") && !done) {
      const bubble = this.settledBubble(turnId, env);
      bubble.finalize(env);
      this.ctx.onActivity(env.actor.actorId);
      return;
    }
    if (this.pairs.message(env)) return; // a watch brief or a steer's guidance: inside its pair
    if (env.actor.actorId === "user:web") this.lastOwn = env;
    const { el, chips } = messageElement(env, this.bubbleCtx);
    this.chipRows.set(env.eventId, chips);
    this.add(el);
    // Directly under the message it answers, the quote says nothing new.
    const above = el.previousElementSibling;
    if (above && env.replyToEventId && above.dataset.eventId === env.replyToEventId) {
      el.querySelector(".ref--reply")?.remove();
    }
    for (const turn of this.ctx.turns.forSource(env.eventId)) this.chip(turn);
  }

  terminal(env) {
    const body = env.body || {};
    const turn = this.ctx.turns.get(body.turnId);
    const status = env.type.slice(5);
    const bubble = this.bubbles.get(body.turnId);
    if (bubble && status !== "completed") {
      bubble.end(status, body.errorCode);
      if (bubble.hasContent()) this.settle(bubble);
      else {
        bubble.el.remove();
        this.bubbles.delete(body.turnId);
      }
    }
    if (turn) this.refreshChips(turn.target);
    const target = (turn && turn.target) || (env.to && env.to[0]);
    if (target) this.ctx.onActivity(target);
    if (status === "completed" || (bubble && bubble.hasContent())) return;
    // Its chip already says so when the request is one of the last few lines on screen.
    const source = turn && this.chipRows.get(turn.sourceEventId);
    const recent = [...this.durable.children].slice(-3);
    if (source && recent.some((el) => el.contains(source))) return;
    const agent = this.ctx.agentActor(target);
    const code = body.errorCode ? ` · ${body.errorCode}` : "";
    this.add(this.line(env, agent, `${TERMINAL_TEXT[status]}${code}`, status === "cancelled" ? "muted" : "err"));
  }

  /** Session events of neighbouring lines share one calm row: "Kimi ready · Grok starting". */
  session(env) {
    const last = this.durable.lastElementChild;
    let group = last && last.classList.contains("sys--session") ? last : null;
    if (!group) {
      group = h("div", { class: "sys sys--session", role: "note" }, h("span", { class: "sys-items" }),
        h("time", { class: "sys-time" }));
      this.add(group);
    }
    const who = env.actor.actorId;
    let entry = group.querySelector(`[data-actor-id="${CSS.escape(who)}"]`);
    if (!entry) {
      entry = tintFor(h("span", { class: "sys-item", dataset: { actorId: who } }), who);
      group.firstChild.append(entry);
    }
    const body = env.body || {};
    const failed = env.type === "session.failed";
    entry.dataset.type = env.type;
    entry.dataset.eventId = env.eventId;
    replaceChildren(entry, h("span", { class: "sys-dot", "aria-hidden": "true" }),
      h("strong", { text: env.actor.displayName }), ` ${sessionSentence(env.type, body)}`,
      sessionDetails(env.type, body));
    const time = group.querySelector(".sys-time");
    time.dateTime = env.occurredAt;
    time.textContent = clockTime(env.occurredAt);
  }

  /** Event types this page does not know: one small, muted line (FEATURES §8). */
  generic(env) {
    const body = env.body || {};
    const detail = typeof body.content === "string" ? body.content : typeof body.message === "string" ? body.message : "";
    const text = `${env.type}${detail ? ` — ${excerpt(detail, 200)}` : ""}`;
    const el = this.line(env, env.actor, text, "muted");
    el.classList.add("sys--generic");
    this.add(el);
  }

  /** "You remembered a public fact: …": the panel has the list; the log says who changed it. */
  memoryLine(env) {
    const record = env.body.record;
    const verb = { "memory.remembered": gettext("remembered"), "memory.superseded": gettext("replaced"),
      "memory.retracted": gettext("retracted") };
    const scope = record.scope && record.scope.type === "agent"
      ? format(gettext("%(name)s's %(type)s"), { name: this.ctx.agentActor(record.scope.id).displayName,
        type: record.agentMemoryType || "core" })
      : gettext("a public");
    const text = format(gettext("%(verb)s %(scope)s %(kind)s: %(content)s"),
      { verb: verb[env.type] || env.type.slice(7), scope, kind: kindName(record.kind), content: excerpt(record.content, 120) });
    const el = this.line(env, env.actor, text, "muted");
    el.classList.add("sys--memory");
    this.add(el);
  }

  line(env, actor, text, tone) {
    const el = h("div", { class: "sys", role: "note", dataset: { eventId: env.eventId, type: env.type, tone } },
      h("span", { class: "sys-dot", "aria-hidden": "true" }),
      actor ? h("strong", { text: actor.displayName || actor.actorId }) : null,
      h("span", { class: "sys-text", text: ` ${text}` }),
      h("time", { class: "sys-time", datetime: env.occurredAt, text: clockTime(env.occurredAt) }));
    if (actor) tintFor(el, actor.actorId);
    return el;
  }

  // ---- transient events ---------------------------------------------------------------------

  applyTransient(env) {
    if (this.detached) return;
    const body = env.body || {};
    if (!body.turnId || isHidden(env.type)) return;
    const turn = this.ctx.turns.get(body.turnId);
    if (turn && TERMINAL.has(turn.status)) return; // a late delta after the reply: already final
    if (env.type === "turn.content.delta" || env.type === "turn.reasoning.delta") {
      const content = env.type === "turn.content.delta";
      if (content) {
        const index = Number.isInteger(body.chunkIndex) ? body.chunkIndex : null;
        if (index !== null && index <= (this.lastChunk.get(body.turnId) ?? -1)) return; // a duplicate
        if (index !== null) this.lastChunk.set(body.turnId, index);
      }
      this.liveBubble(body.turnId, env.actor);
      let entry = this.pending.get(body.turnId);
      if (!entry) {
        entry = { text: "", reasoning: "", firstChunk: null };
        this.pending.set(body.turnId, entry);
      }
      if (content && entry.firstChunk === null) entry.firstChunk = body.chunkIndex ?? 0;
      if (content) entry.text += String(body.text ?? "");
      else entry.reasoning += String(body.text ?? "");
      if (!this.flushTimer) this.flushTimer = setTimeout(() => this.flush(), DELTA_BATCH_MS);
    } else if (env.type === "tool.progress") {
      this.liveBubble(body.turnId, env.actor).tool(body);
      this.ctx.onActivity(env.actor.actorId);
      this.changed();
    }
  }

  /** Apply batched deltas: at most one DOM write per Turn every 32 ms. */
  flush() {
    clearTimeout(this.flushTimer);
    this.flushTimer = null;
    if (!this.pending.size) return;
    for (const [turnId, entry] of this.pending) {
      const bubble = this.bubbles.get(turnId);
      if (!bubble || bubble.state !== "live") continue;
      const before = bubble.activity();
      if (entry.reasoning) bubble.appendReasoning(entry.reasoning);
      if (entry.text) bubble.appendText(entry.text, entry.firstChunk ?? 0);
      if (bubble.activity() !== before) this.ctx.onActivity(bubble.actor.actorId);
    }
    this.pending.clear();
    this.changed();
  }

  // ---- Turn bubbles and chips -----------------------------------------------------------------

  /** The bubble of a Turn that is working now (created in the live zone if needed). */
  liveBubble(turnId, actorHint) {
    let bubble = this.bubbles.get(turnId);
    if (bubble) return bubble;
    const turn = this.ctx.turns.get(turnId);
    const actorId = (turn && turn.target) || (actorHint && actorHint.actorId);
    const actor = actorHint && actorHint.kind === "agent" ? actorHint : this.ctx.agentActor(actorId);
    bubble = new TurnBubble({ turnId, actor, sourceEventId: turn && turn.sourceEventId, occurredAt: null },
      this.bubbleCtx);
    if (turn) bubble.setStatus(turn.status);
    this.bubbles.set(turnId, bubble);
    if (this.prepending) this.prepending.created.add(turnId);
    const pair = this.pairs.home(turnId);
    const thread = !pair && this.threads.home(turn && turn.sourceEventId);
    if (thread) this.intoThread(bubble, thread);
    else (pair || this.live).append(bubble.el);
    this.ctx.onActivity(actor.actorId);
    this.changed();
    return bubble;
  }

  /** The bubble of a Turn whose durable records are arriving: it now has a place in the log. */
  settledBubble(turnId, env) {
    const bubble = this.liveBubble(turnId, env.actor);
    this.settle(bubble);
    return bubble;
  }

  settle(bubble) {
    bubble.settled = true;
    // An older page never pulls a newer, already placed bubble up to its own position.
    if (this.prepending && this.prepending.home.contains(bubble.el)) return;
    if (bubble.threadOf || bubble.el.parentElement === this.durable || this.pairs.home(bubble.turnId)) return;
    const thread = this.threads.home(bubble.sourceEventId);
    if (thread) this.intoThread(bubble, thread);
    else this.add(bubble.el);
  }

  /** A Turn's bubble under its prompt: the "↩ prompt" quote is dropped, it is right above. */
  intoThread(bubble, thread) {
    bubble.threadOf = thread.parentElement.dataset.threadOf;
    bubble.parts.ref.querySelector(`.ref--reply[data-ref-event-id="${CSS.escape(bubble.threadOf)}"]`)?.remove();
    thread.append(bubble.el);
    groupByAuthor(bubble.el);
    this.threads.changed(thread);
    this.changed();
  }

  /** After bootstrap: live bubbles for Turns that are running now. */
  restoreActive(turns) {
    for (const turn of turns) {
      if (turn.status === "running" || turn.status === "cancelling") this.liveBubble(turn.turnId).setStatus(turn.status);
      this.chip(turn);
    }
  }

  /** A Turn's status changed: its chip, and every queued chip of that agent (positions moved). */
  turnChanged(turn) {
    if (this.detached) return;
    const bubble = this.bubbles.get(turn.turnId);
    if (bubble && !TERMINAL.has(turn.status)) bubble.setStatus(turn.status);
    this.refreshChips(turn.target);
    this.chip(turn);
    this.pairs.turnChanged(turn.turnId);
  }

  refreshChips(actorId) {
    for (const turn of this.ctx.turns.forAgent(actorId)) if (this.chips.has(turn.turnId)) this.chip(turn);
  }

  chip(turn) {
    renderChip(this, turn);
  }

  activityFor(turnId) {
    const bubble = this.bubbles.get(turnId);
    return bubble ? bubble.activity() : null;
  }

  // ---- bookkeeping, trimming and following ------------------------------------------------------

  remember(env) {
    this.refs.set(env.eventId, env);
    if (this.refs.size > MAX_REFERENCES) this.refs.delete(this.refs.keys().next().value);
  }

  /** A page's referencedMessages (older messages its events reply to): their quotes. */
  rememberReferences(list) {
    for (const ref of list || []) {
      if (!this.refs.has(ref.eventId)) {
        this.remember({ eventId: ref.eventId, seq: ref.seq, actor: ref.actor, occurredAt: ref.occurredAt,
          body: { content: ref.excerpt } });
      }
    }
  }

  /** Messages after ``seq`` are new to the reader: a divider goes above the first one. */
  markUnreadAfter(seq) {
    this.unreadAfter = Number.isInteger(seq) ? seq : null;
  }

  add(el) {
    // The seq that placed an item: where history.js reads again once the item is trimmed.
    if (!el.dataset.seq && Number.isInteger(this.applyingSeq)) el.dataset.seq = String(this.applyingSeq);
    if (this.unreadAfter !== null && el.matches("article.msg") && this.applyingSeq > this.unreadAfter) {
      this.divider?.remove();
      this.divider = h("div", { class: "unread-divider", role: "separator", "aria-label": gettext("New messages") },
        h("span", { text: gettext("New messages") }));
      this.durable.append(this.divider);
      this.unreadAfter = null;
    }
    this.durable.append(el);
    groupByAuthor(el);
    // Only a reader at the newest end loses old items: someone scrolled back keeps what they read.
    if (!this.prepending && !this.appending && this.following()) this.trim();
  }

  /** An item leaves the page: its bubbles and chip rows (a thread holds several) are forgotten. */
  forget(el) {
    for (const node of [el, ...el.querySelectorAll("[data-event-id], [data-turn-id]")]) {
      if (node.dataset.eventId) this.chipRows.delete(node.dataset.eventId);
      if (node.dataset.turnId) this.bubbles.delete(node.dataset.turnId);
    }
  }

  /** Keep at most MAX_ITEMS messages, dropping the oldest TRIM_BATCH items at a time. */
  trim() {
    if (itemCount(this.durable) <= MAX_ITEMS) return;
    while (itemCount(this.durable) > MAX_ITEMS) {
      for (let i = 0; i < TRIM_BATCH && this.durable.firstElementChild; i += 1) {
        const old = this.durable.firstElementChild;
        this.forget(old);
        old.remove();
      }
    }
    for (const [turnId, chip] of this.chips) if (!chip.isConnected) this.chips.delete(turnId);
    const first = this.durable.firstElementChild;
    this.floorSeq = first && first.dataset.seq ? Number(first.dataset.seq) : this.floorSeq;
    this.hasOlder = true;
  }

  atBottom() {
    const s = this.scroller;
    return s.scrollHeight - s.scrollTop - s.clientHeight < 48;
  }

  following() {
    return Date.now() - this.pausedAt > FOLLOW_PAUSE_MS;
  }

  /** Sending (or the "new messages" button) resumes following at once. */
  follow() {
    if (this.detached) {
      this.ctx.onLatest();
      return;
    }
    this.pausedAt = 0;
    this.jump.hidden = true;
    this.trim(); // back at the newest end: what was read back goes again
    this.scroller.scrollTop = this.scroller.scrollHeight;
  }

  /** Something was added: follow the newest item unless the user is reading (one frame later). */
  changed() {
    if (this.renderQueued || this.prepending || this.detached) return;
    this.renderQueued = true;
    requestAnimationFrame(() => {
      this.renderQueued = false;
      if (this.following()) {
        this.scroller.scrollTop = this.scroller.scrollHeight;
        this.jump.hidden = true;
      } else if (!this.atBottom()) {
        this.jump.textContent = `↓ ${gettext("New messages")}`;
        this.jump.hidden = false;
      }
    });
  }
}
