// room_health.js — one line under the header that says plainly when the room is not all well:
// GroupX still starting (writes wait), failed to start, or degraded (the store, its integrity
// check, an agent that keeps failing, no worker owning the room in split mode). Hidden when /api/health says ready and ok
// (FEATURES §16, docs/DECISIONS.md D42).

import { h } from "./dom.js";
import { format, gettext } from "./i18n.js";

const AGENT_TROUBLE = {
  degraded: gettext("%(name)s keeps failing to start"), failed: gettext("%(name)s could not start"),
  native_policy_blocked: gettext("%(name)s is blocked by a policy"),
};

function agentName(entry) {
  return String(entry.displayName || entry.actorId || gettext("an agent")).replace(/^agent:/, "");
}

/** Split mode with no live agents' worker: queued Turns wait, and the page says why (D45). */
function noOwner(health) {
  return Boolean(health.worker) && !health.worker.owner;
}

/** The reasons behind a degraded status, one short sentence each. */
function reasons(health) {
  const found = [];
  if (noOwner(health)) found.push(health.worker.message || gettext("no worker owns the room"));
  const store = health.store || {};
  if (store.available === false) found.push(store.faultMessage || gettext("the database does not take writes"));
  if (store.integrityOk === false) {
    const first = (store.integrityProblems || [])[0];
    found.push(format(gettext("the database failed its integrity check%(first)s; export the room and keep a copy of the .groupx folder"),
      { first: first ? ` (${first.split("\n").pop()})` : "" }));
  }
  for (const entry of health.agents || []) {
    const trouble = AGENT_TROUBLE[entry.status];
    if (trouble) {
      const said = format(trouble, { name: agentName(entry) });
      found.push(entry.lastError ? `${said}: ${entry.lastError.message || entry.lastError.code}` : said);
    }
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
      title = gettext("Starting");
      detail = [health.lastError ? format(gettext("waiting for the store: %(reason)s"), { reason: health.lastError.message })
        : gettext("recovering the room and starting the agents; sending waits until it is ready")];
    } else if (readiness === "failed") {
      state = "failed";
      title = gettext("GroupX failed to start");
      detail = [health.lastError ? health.lastError.message : gettext("see the server's log")];
    } else if (health.status === "degraded") {
      state = "degraded";
      title = gettext("Degraded");
      detail = reasons(health);
    }
    this.el.dataset.state = state;
    this.el.hidden = state === "ok";
    this.el.replaceChildren(h("strong", { text: title }), detail.length ? ` — ${detail.join("; ")}` : "");
    return readiness === "starting" || noOwner(health);
  }
}
