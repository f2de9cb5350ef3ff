// room_health.js — one line under the header that says plainly when the room is not all well:
// GroupX still starting (writes wait), failed to start, or degraded (the store, its integrity
// check, an agent that keeps failing, no worker owning the room in split mode). Hidden when /api/health says ready and ok
// (FEATURES §16, docs/DECISIONS.md D42).

import { h } from "./dom.js";

const AGENT_TROUBLE = { degraded: "keeps failing to start", failed: "could not start",
  native_policy_blocked: "is blocked by a policy" };

function agentName(entry) {
  return String(entry.displayName || entry.actorId || "an agent").replace(/^agent:/, "");
}

/** Split mode with no live agents' worker: queued Turns wait, and the page says why (D45). */
function noOwner(health) {
  return Boolean(health.worker) && !health.worker.owner;
}

/** The reasons behind a degraded status, one short sentence each. */
function reasons(health) {
  const found = [];
  if (noOwner(health)) found.push(health.worker.message || "no worker owns the room");
  const store = health.store || {};
  if (store.available === false) found.push(store.faultMessage || "the database does not take writes");
  if (store.integrityOk === false) {
    const first = (store.integrityProblems || [])[0];
    found.push(`the database failed its integrity check${first ? ` (${first.split("\n").pop()})` : ""}; `
      + "export the room and keep a copy of the .groupx folder");
  }
  for (const entry of health.agents || []) {
    const trouble = AGENT_TROUBLE[entry.status];
    if (trouble) found.push(`${agentName(entry)} ${trouble}${entry.lastError ? `: ${entry.lastError.message || entry.lastError.code}` : ""}`);
  }
  return found;
}

export class RoomHealth {
  constructor(el) {
    this.el = el;
  }

  /** Show /api/health; returns true while GroupX is still starting or no worker owns the room
   * (the caller polls sooner). */
  show(health) {
    const readiness = health.readiness;
    let state = "ok";
    let title = "";
    let detail = [];
    if (readiness === "starting") {
      state = "starting";
      title = "Starting";
      detail = [health.lastError ? `waiting for the store: ${health.lastError.message}`
        : "recovering the room and starting the agents; sending waits until it is ready"];
    } else if (readiness === "failed") {
      state = "failed";
      title = "GroupX failed to start";
      detail = [health.lastError ? health.lastError.message : "see the server's log"];
    } else if (health.status === "degraded") {
      state = "degraded";
      title = "Degraded";
      detail = reasons(health);
    }
    this.el.dataset.state = state;
    this.el.hidden = state === "ok";
    this.el.replaceChildren(h("strong", { text: title }), detail.length ? ` — ${detail.join("; ")}` : "");
    return readiness === "starting" || noOwner(health);
  }
}
