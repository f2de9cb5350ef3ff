// sidebar.js — the agent cards: who is here, whether their CLI is up, and what each is doing.
//
// Status comes from bootstrap, then from durable session.* events as they happen, the transient
// session.retrying, and a /api/health poll every 60 s (the only source of lastError updates
// between restarts besides session.failed; the agent's next completed Turn clears it). "Busy"
// and the activity line come from the Turn store and the live bubbles.
// Agents saved through /setup after this process started (bootstrap pendingAgents) get a card
// marked "pending restart": they count toward the room, but nothing can be sent to them yet.

import { avatarInitials } from "./avatars.js";
import { h, tintFor } from "./dom.js";
import { detailsOf, errorSentence, explains } from "./event_sentences.js";
import { format, gettext } from "./i18n.js";

const STATUS_LABEL = {
  ready: gettext("ready"),
  starting: gettext("starting"),
  restarting: gettext("restarting"),
  retrying: gettext("retrying"),
  degraded: gettext("degraded"),
  failed: gettext("failed"),
  native_policy_blocked: gettext("blocked by policy"),
  stopped: gettext("stopped"),
  pending_restart: gettext("pending restart"),
};
const SESSION_STATUS = {
  "session.starting": "starting",
  "session.ready": "ready",
  "session.resumed": "ready",
  "session.failed": "failed",
  "session.stopped": "stopped",
};

// A card shows one state and says what went wrong in words (event_sentences.js); the code is under "details".
const DOWN = ["failed", "degraded", "native_policy_blocked", "stopped"];

/** "Its CLI could not be started." while down; "Working again after a problem." once it is back. */
function cardSentence(status, error) {
  const what = errorSentence(error.code);
  return DOWN.includes(status) ? what
    : format(gettext("Working again; earlier: %(problem)s"), { problem: `${what.charAt(0).toLowerCase()}${what.slice(1)}` });
}

/** The end of a working folder is what tells agents apart; the full path is in the tooltip. */
function shortPath(path) {
  if (!path || path.length <= 30) return path || "";
  const parts = String(path).split("/").filter(Boolean);
  const tail = parts.slice(-2).join("/");
  return tail.length <= 28 ? `…/${tail}` : `…/${parts[parts.length - 1]}`;
}

/** Where an agent runs: nothing for this machine, ``host:`` for an SSH destination (D51). */
function hostPrefix(card) {
  return card.host && card.host !== "local" ? `${card.host}:` : "";
}

function hostTitle(card) {
  const where = card.host && card.host !== "local" ? format(gettext("runs on %(host)s (ssh): "), { host: card.host }) : "";
  return where + (card.cwd || "");
}

export class Sidebar {
  /** @param onMemory(actorId, button) opens the agent's memory drawer;
   *  @param onRestart(actorId, displayName, button) restarts the agent's CLI (agent_restart.js) */
  constructor({ list, count }, { onMemory, onRestart } = {}) {
    this.list = list;
    this.count = count;
    this.onMemory = onMemory;
    this.onRestart = onRestart;
    this.agents = new Map(); // actorId → {card, el, parts}
    this.pending = [];
  }

  setAgents(cards, pending = []) {
    this.agents.clear();
    this.list.replaceChildren();
    const live = new Set(cards.map((card) => card.actorId));
    this.pending = pending.filter((card) => card && card.actorId && !live.has(card.actorId));
    for (const card of cards) {
      const parts = {
        status: h("span", { class: "agent-status" }),
        activity: h("span", { class: "agent-activity" }),
        queued: h("span", { class: "agent-queued", hidden: true }),
        error: h("p", { class: "agent-error", role: "status", hidden: true }),
      };
      const mcp = card.capabilities && card.capabilities.currentTurnMcp ? gettext("MCP on") : gettext("MCP off");
      const memory = this.onMemory ? h("button", { type: "button", class: "agent-memory-btn", text: gettext("Memory"),
        "aria-label": format(gettext("%(name)s's memory"), { name: card.displayName }), "aria-controls": "agent-memory" })
        : null;
      if (memory) memory.addEventListener("click", () => this.onMemory(card.actorId, memory));
      const restart = this.onRestart ? h("button", { type: "button", class: "agent-restart-btn", text: gettext("Restart"),
        "aria-label": format(gettext("Restart %(name)s's CLI"), { name: card.displayName }) }) : null;
      if (restart) restart.addEventListener("click", () => this.onRestart(card.actorId, card.displayName, restart));
      const el = tintFor(h("li", { class: "agent-card", dataset: { actorId: card.actorId } },
        h("div", { class: "agent-row" },
          h("span", { class: "avatar", "aria-hidden": "true", text: avatarInitials(card.actorId, card.displayName) }),
          h("span", { class: "agent-name", text: card.displayName }),
          parts.status),
        h("p", { class: "agent-now" }, parts.activity, parts.queued),
        h("p", { class: "agent-meta" },
          h("span", { class: "agent-cwd", title: hostTitle(card), text: hostPrefix(card) + shortPath(card.cwd) }),
          h("span", { class: "agent-driver-row" },
            h("span", { class: "agent-driver", text: `${card.driver || ""} · ${mcp}` }),
            h("span", { class: "agent-buttons" }, memory, restart))),
        parts.error), card.actorId);
      this.agents.set(card.actorId, { card: { ...card }, el, parts, activity: null, queued: 0 });
      this.list.append(el);
      this.render(card.actorId);
    }
    for (const card of this.pending) this.list.append(this.pendingCard(card));
    this.renderCount();
  }

  /** A saved but not yet started agent: shown and counted, never a recipient, no live status. */
  pendingCard(card) {
    const name = card.displayName || String(card.actorId).replace(/^agent:/, "");
    return tintFor(h("li", { class: "agent-card agent-card--pending",
      dataset: { actorId: card.actorId, status: "pending_restart" } },
      h("div", { class: "agent-row" },
        h("span", { class: "avatar", "aria-hidden": "true", text: avatarInitials(card.actorId, name) }),
        h("span", { class: "agent-name", text: name }),
        h("span", { class: "agent-status" }, h("span", { class: "dot", "aria-hidden": "true" }), STATUS_LABEL.pending_restart)),
      h("p", { class: "agent-now" }, h("span", { class: "agent-activity", text: gettext("Saved in settings; starts after groupx restart") })),
      h("p", { class: "agent-meta" },
        card.cwd ? h("span", { class: "agent-cwd", title: hostTitle(card), text: hostPrefix(card) + shortPath(card.cwd) }) : null,
        card.driver ? h("span", { class: "agent-driver", text: card.driver }) : null)), card.actorId);
  }

  has(actorId) {
    return this.agents.has(actorId);
  }

  ids() {
    return [...this.agents.keys()];
  }

  update(actorId, fields) {
    const agent = this.agents.get(actorId);
    if (!agent) return;
    Object.assign(agent.card, fields);
    this.render(actorId);
    this.renderCount();
  }

  /** A durable session.* event or the transient session.retrying. */
  session(env) {
    const actorId = env.actor.actorId;
    const body = env.body || {};
    if (env.type === "session.retrying") {
      this.update(actorId, { status: "retrying",
        retry: format(gettext("attempt %(attempt)s of %(max)s"), { attempt: body.attempt, max: body.maxAttempts }) });
    } else if (env.type === "session.failed") {
      // agentStatus: "degraded" after repeated failures, else "failed" (docs/DECISIONS.md D42).
      this.update(actorId, { status: body.agentStatus || "failed", retry: null,
        lastError: { code: body.errorCode, message: body.message } });
    } else if (env.type in SESSION_STATUS) {
      // A rebuilt session keeps the last error on show, as health does, until a Turn completes.
      this.update(actorId, { status: SESSION_STATUS[env.type], retry: null });
    }
  }

  /** A system.error about one agent (body.actorId): on its card while active, gone once healed. */
  systemError(env) {
    const body = env.body || {};
    const agent = this.agents.get(body.actorId);
    if (!agent) return;
    const problems = { ...(agent.card.problems || {}) };
    if (body.status === "active") problems[body.condition] = { code: body.code, message: body.message };
    else delete problems[body.condition];
    this.update(body.actorId, { problems });
  }

  /** A completed Turn: the agent works again, so its last error is history (health does the same). */
  turnCompleted(actorId) {
    const agent = this.agents.get(actorId);
    if (agent && agent.card.lastError) this.update(actorId, { lastError: null });
  }

  /** /api/health agents: {actorId, status, lastError?}. */
  health(entries) {
    for (const entry of entries) {
      this.update(entry.actorId, { status: entry.status, lastError: entry.lastError || null });
    }
  }

  /** {busy: bool, text: "Running shell…" | null, queued: n} from the Turn store and bubbles. */
  setActivity(actorId, activity) {
    const agent = this.agents.get(actorId);
    if (!agent) return;
    agent.activity = activity;
    this.render(actorId);
    this.renderCount();
  }

  render(actorId) {
    const { card, el, parts, activity } = this.agents.get(actorId);
    const status = card.status || "stopped";
    el.dataset.status = status;
    el.dataset.busy = activity && activity.busy ? "true" : "false";
    parts.status.replaceChildren(h("span", { class: "dot", "aria-hidden": "true" }),
      STATUS_LABEL[status] || status, card.retry ? ` (${card.retry})` : "");
    const down = DOWN.includes(status);
    parts.activity.textContent = activity && activity.busy ? activity.text || gettext("Working")
      : down ? gettext("Not running") : gettext("Idle");
    parts.activity.title = parts.activity.textContent;
    parts.queued.hidden = !(activity && activity.queued);
    parts.queued.textContent = activity && activity.queued
      ? format(gettext("%(count)s queued"), { count: activity.queued }) : "";
    parts.activity.classList.toggle("is-busy", Boolean(activity && activity.busy));
    // One line of what went wrong: the active system.error about this agent (D89), until it heals,
    // else its last error; a plain sentence, the code and message under "details".
    const problem = Object.values(card.problems || {}).pop();
    const error = problem || card.lastError;
    parts.error.hidden = !error;
    parts.error.classList.toggle("agent-problem", Boolean(problem));
    parts.error.classList.toggle("is-past", Boolean(error) && !problem && !down);
    if (!error) return;
    const sentence = problem && !explains(problem.code) ? problem.message
      : cardSentence(problem ? "failed" : status, error);
    parts.error.replaceChildren(sentence, " ", detailsOf(error.code || "ERROR", error.message));
  }

  renderCount() {
    const all = [...this.agents.values()];
    const ready = all.filter((a) => a.card.status === "ready").length;
    const busy = all.filter((a) => a.activity && a.activity.busy).length;
    // Pending agents count toward the room (they are configured) but are never "ready" yet.
    this.count.textContent = format(gettext("%(ready)s/%(all)s ready"), { ready, all: all.length + this.pending.length });
    this.count.title = busy ? format(gettext("%(count)s working now"), { count: busy }) : gettext("nobody is working now");
  }
}
