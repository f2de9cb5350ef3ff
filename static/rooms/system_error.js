// system_error.js — a failure outside any Turn, in words (PROTOCOL §14; docs/DECISIONS.md D89).
//
// A system.error (author system:groupx, body {condition, code, message, status, actorId?}) says a
// condition began (status "active": a CLI that keeps failing to start, a dated-memory rollup or a
// room compaction that failed, a damaged database file, no worker running the agents) or healed
// (status "resolved"). The timeline draws it as one line in plain words, the code beside it; the
// agent card it concerns (actorId) keeps the active ones on show until they heal (sidebar.js).

import { clockTime, h } from "./dom.js";
import { format, gettext } from "./i18n.js";

export const SYSTEM_ERROR = "system.error";

/** Render one system.error envelope into the timeline (its add and ctx). */
export function renderSystemError(timeline, env) {
  const body = env.body || {};
  const healed = body.status === "resolved";
  const subject = body.actorId ? timeline.ctx.agentActor(body.actorId).displayName : gettext("The room");
  const el = h("div", {
    class: "sys sys--system-error", role: "note", // not "alert": a reload replays them all
    dataset: { eventId: env.eventId, type: env.type, tone: healed ? "ok" : "err", condition: body.condition || "" },
  },
  h("span", { class: "sys-dot", "aria-hidden": "true" }),
  h("strong", { text: format(healed ? gettext("%(subject)s: healed") : gettext("%(subject)s: problem"), { subject }) }),

  h("span", { class: "sys-text", text: ` ${body.message || body.condition || ""} ` }),
  body.code ? h("code", { class: "sys-code", text: body.code }) : null,
  h("time", { class: "sys-time", datetime: env.occurredAt, text: clockTime(env.occurredAt) }));
  timeline.add(el);
}
