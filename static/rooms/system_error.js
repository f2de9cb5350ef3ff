// system_error.js — a failure outside any Turn, in words (PROTOCOL §14; docs/DECISIONS.md D89).
//
// A system.error (author system:groupx, body {condition, code, message, status, actorId?}) says a
// condition began (status "active": a CLI that keeps failing to start, a dated-memory rollup or a
// room compaction that failed, a damaged database file, no worker running the agents) or healed
// (status "resolved"). The timeline draws it as one line: the page's own sentence for the
// condition's family in the reader's language, the code and the server's message under "details"
// (the server's message alone for a condition this page has no sentence for). The agent card it
// concerns (actorId) keeps the active ones on show until they heal (sidebar.js).

import { clockTime, h } from "./dom.js";
import { detailsOf } from "./event_sentences.js";
import { format, gettext } from "./i18n.js";

export const SYSTEM_ERROR = "system.error";

// The condition's family (before its first ":") → [while active, once healed]; %(name)s: the agent.
const SENTENCES = {
  session: [gettext("%(name)s's CLI could not start; its Turns wait, and the next one tries again (or restart the agent)."),
    gettext("%(name)s's CLI started again.")],
  "memory.dated": [gettext("%(name)s's dated memory could not be written; GroupX tries again later and nothing of the day is lost."),
    gettext("%(name)s's dated memory is written again.")],
  "room.summary": [gettext("No agent could write the room's summary; agents get the older summary and the recent messages until a compaction works."),
    gettext("The room's summary is written again.")],
  "assistant.brain": [gettext("The room assistant's CLI could not start; the side chat answers once it starts."),
    gettext("The room assistant's CLI started again.")],
  "store.integrity": [gettext("The room's database file is damaged: back it up and see /api/health?integrity=check."),
    gettext("The integrity check finds the database file sound again.")],
  "worker.none": [gettext("No worker runs the room's agents: their Turns wait until one starts."),
    gettext("A worker runs the room's agents again.")],
  "worker.agent": [gettext("No live worker runs %(name)s: its Turns wait until one takes it."),
    gettext("A worker runs %(name)s again.")],
  "lease.lost": [gettext("A GroupX process stopped its agents: another one took the room over."),
    gettext("A live GroupX process runs the room's agents now.")],
};

/** Render one system.error envelope into the timeline (its add and ctx). */
export function renderSystemError(timeline, env) {
  const body = env.body || {};
  const healed = body.status === "resolved";
  const name = body.actorId ? timeline.ctx.agentActor(body.actorId).displayName : null;
  const subject = name || gettext("The room");
  const said = SENTENCES[String(body.condition || "").split(":")[0]];
  const text = said ? format(said[healed ? 1 : 0], { name: name || gettext("an agent") })
    : body.message || body.condition || "";
  const el = h("div", {
    class: "sys sys--system-error", role: "note", // not "alert": a reload replays them all
    dataset: { eventId: env.eventId, type: env.type, tone: healed ? "ok" : "err", condition: body.condition || "" },
  },
  h("span", { class: "sys-dot", "aria-hidden": "true" }),
  h("strong", { text: format(healed ? gettext("%(subject)s: healed") : gettext("%(subject)s: problem"), { subject }) }),
  h("span", { class: "sys-text", text: ` ${text} ` }),
  said ? detailsOf(body.code, body.message) : body.code ? h("code", { class: "sys-code", text: body.code }) : null,
  h("time", { class: "sys-time", datetime: env.occurredAt, text: clockTime(env.occurredAt) }));
  timeline.add(el);
}
