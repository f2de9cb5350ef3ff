// supervision.js — a supervision pair as one group in the timeline (FEATURES §12, §17).
//
// A pair's durable events arrive in seq order right after its task: the watch brief (a
// message.created of kind "supervision.watch") opens the group and names the workers' Turns;
// supervision.paired names the observers'; every steer posts its guidance message and then
// supervision.steered; every watch that returned writes supervision.observed. The group holds the
// workers' and the observers' bubbles (the timeline asks home(turnId) where a bubble goes), the
// guidance and a line per steer with its reason; its header says how the pair stands and how many
// steers there were. The composer never picks observers: pairs come from agents, the operator and
// POST /api/messages (PROTOCOL §4.3).

import { excerpt, h, replaceChildren, tintFor } from "./dom.js";
import { messageElement } from "./bubble.js";
import { format, gettext, ngettext } from "./i18n.js";
import { TERMINAL } from "./turns.js";

export const WATCH_BRIEF_KIND = "supervision.watch";
const PREFERRED = ["running", "cancelling", "dispatching", "queued"]; // the worker the header speaks of
const STATUS_TEXT = {
  queued: gettext("queued"), dispatching: gettext("starting"), running: gettext("working"), cancelling: gettext("cancelling"),
  completed: gettext("done"), failed: gettext("failed"), cancelled: gettext("cancelled"), interrupted: gettext("interrupted"),
};

export class PairGroups {
  /** @param timeline the Timeline: its ctx (turns, agentActor), bubbleCtx, chipRows, add(), chip(), line() */
  constructor(timeline) {
    this.timeline = timeline;
    this.pairs = new Map(); // pairId → {el, flow, head, workers[], observers[], steers}
    this.homes = new Map(); // turnId → pair
  }

  /** A watch brief or a steer's guidance: rendered in its pair; false for any other message. */
  message(env) {
    const body = env.body || {};
    if (body.kind === WATCH_BRIEF_KIND && body.pairId) {
      this.open(env);
      return true;
    }
    const pair = body.steer && this.pairs.get(body.steer.pairId);
    if (!pair) return false;
    const { el, chips } = messageElement(env, this.timeline.bubbleCtx);
    el.classList.add("pair-guidance");
    el.dataset.steer = body.steer.action;
    pair.flow.append(el);
    this.timeline.chipRows.set(env.eventId, chips);
    for (const turn of this.timeline.ctx.turns.forSource(env.eventId)) this.timeline.chip(turn);
    return true;
  }

  /** supervision.paired | observed | steered; a pair whose brief is not on the page gets a plain line. */
  apply(env) {
    const body = env.body || {};
    const pair = this.pairs.get(body.pairId);
    if (!pair) return this.timeline.generic(env);
    if (env.type === "supervision.paired") {
      for (const o of body.observers || []) this.adopt(pair, o.turnId, "observers");
    } else if (env.type === "supervision.steered") {
      pair.steers += 1;
      this.adopt(pair, body.nextTurnId, "workers");
      const worker = this.name(this.timeline.ctx.turns.get(body.subjectTurnId), body.subjectTurnId);
      const what = format(body.action === "interrupt"
        ? gettext("interrupted %(worker)s: an interrupt cancels the whole Turn and queues the guidance")
        : gettext("nudged %(worker)s: the guidance is queued after the current Turn"), { worker });
      pair.flow.append(this.note(env, format(gettext("%(what)s · reason: %(reason)s"),
        { what, reason: excerpt(body.reason, 300) }), `steer-${body.action}`));
    } else if (env.type === "supervision.observed") {
      const worker = this.name(this.timeline.ctx.turns.get(body.subjectTurnId), body.subjectTurnId);
      const seen = format(gettext("watched %(worker)s: %(status)s"), { worker, status: STATUS_TEXT[body.status] || body.status });
      pair.flow.append(this.note(env, body.timedOut ? `${seen} ${gettext("(no milestone before the timeout)")}` : seen,
        "observed"));
    }
    this.refresh(pair);
  }

  /** Where the bubble of ``turnId`` belongs: its pair's flow, or null (the timeline's own place). */
  home(turnId) {
    const pair = this.homes.get(turnId);
    return pair ? pair.flow : null;
  }

  /** A Turn's status changed: the header of its pair. */
  turnChanged(turnId) {
    const pair = this.homes.get(turnId);
    if (pair) this.refresh(pair);
  }

  // ---- inside -------------------------------------------------------------------------------

  open(brief) {
    const body = brief.body;
    const head = h("header", { class: "pair-head" },
      h("span", { class: "pair-title", text: gettext("Supervised task") }),
      h("span", { class: "pair-who" }),
      h("span", { class: "pair-status", role: "status" }),
      h("span", { class: "pair-steers" }));
    const chips = h("div", { class: "turn-chips", role: "list", "aria-label": gettext("Watch Turns") });
    const details = h("details", { class: "pair-brief" },
      h("summary", { text: gettext("Watch brief") }), h("p", { text: excerpt(body.content, 600) }));
    const flow = h("div", { class: "pair-flow" });
    const el = h("section", { class: "pair", role: "group", "aria-label": gettext("Supervised task"),
      dataset: { pairId: body.pairId, eventId: brief.eventId, type: "supervision.pair" } },
    head, h("div", { class: "pair-watch" }, details, chips), flow);
    const pair = { id: body.pairId, el, flow, head, workers: [], observers: [], steers: 0 };
    this.pairs.set(body.pairId, pair);
    for (const worker of body.workers || []) this.adopt(pair, worker.turnId, "workers");
    for (const turn of this.timeline.ctx.turns.forSource(brief.eventId)) this.adopt(pair, turn.turnId, "observers");
    this.timeline.add(el);
    this.timeline.chipRows.set(brief.eventId, chips);
    this.refresh(pair);
  }

  adopt(pair, turnId, role) {
    if (!turnId || this.homes.has(turnId)) return;
    this.homes.set(turnId, pair);
    pair[role].push(turnId);
    // A bubble drawn before the pair was known (a page window that began mid-pair) moves in.
    const bubble = this.timeline.bubbles.get(turnId);
    if (bubble) pair.flow.append(bubble.el);
  }

  name(turn, fallback) {
    const actorId = turn ? turn.target : null;
    return actorId ? this.timeline.ctx.agentActor(actorId).displayName : fallback;
  }

  note(env, text, tone) {
    const el = this.timeline.line(env, env.actor, text, "muted");
    el.classList.add("pair-note");
    el.dataset.pairNote = tone;
    return el;
  }

  /** The header: who works, who watches, how the current worker Turn stands, the steer count. */
  refresh(pair) {
    const turns = this.timeline.ctx.turns;
    const workers = pair.workers.map((id) => turns.get(id)).filter(Boolean);
    const observers = pair.observers.map((id) => turns.get(id)).filter(Boolean);
    const current = PREFERRED.map((s) => workers.find((t) => t.status === s)).find(Boolean) || workers.at(-1);
    const watching = observers.some((t) => !TERMINAL.has(t.status));
    const names = (list) => [...new Set(list.map((t) => this.name(t, t.turnId)))].join(", ") || "…";
    const [, who, status, steers] = pair.head.children;
    replaceChildren(who, h("strong", { text: names(workers) }), ` ${gettext("watched by")} `,
      h("strong", { text: names(observers) }));
    const state = current ? current.status : "queued";
    status.textContent = format(gettext("worker %(state)s · %(watch)s"),
      { state: STATUS_TEXT[state] || state, watch: watching ? gettext("watching") : gettext("watch ended") });
    pair.el.dataset.state = !TERMINAL.has(state) ? "active" : state === "completed" ? "done" : "stopped";
    steers.textContent = format(ngettext("%(count)s steer", "%(count)s steers", pair.steers), { count: pair.steers });
    if (current) tintFor(pair.el, current.target);
  }
}
