// operator_dispatch.js — the room assistant's dispatch as one row in the timeline (FEATURES §13).
//
// An operator.dispatch (author user:assistant, body {content, operation, promptLength, targets})
// is work the assistant handed to agents through its operator tools: not a chat bubble, but a
// distinct row that says who it went to, what it asked, and carries the Turns' chips (their
// source is this event), so the targets' replies quote it like any request. The timeline calls
// the renderers room.js registers for a type (its ctx.renderers) instead of its generic line.

import { clockTime, excerpt, h, tintFor } from "./dom.js";
import { format, gettext, ngettext } from "./i18n.js";

export const OPERATOR_DISPATCH = "operator.dispatch";
const VERBS = {
  worker_ask: gettext("asked"), worker_dispatch: gettext("dispatched to"), dispatch_event: gettext("routed a message to"),
};

/** A target is an actorId, or an object naming one (actorId or target) with its turnId. */
function targetId(target) {
  return typeof target === "string" ? target : (target && (target.actorId || target.target)) || "";
}

/** Render one operator.dispatch envelope into the timeline (its add, chipRows, chip and ctx). */
export function renderOperatorDispatch(timeline, env) {
  const body = env.body || {};
  const actor = env.actor || { actorId: "user:assistant", displayName: gettext("Assistant") };
  const targets = (Array.isArray(body.targets) ? body.targets : []).map(targetId).filter(Boolean);
  const names = targets.map((actorId) => tintFor(h("span", { class: "dispatch-target", role: "listitem",
    dataset: { actorId }, text: `@${timeline.ctx.agentActor(actorId).displayName}` }), actorId));
  const verb = VERBS[body.operation] || VERBS.worker_dispatch;
  const chips = h("div", { class: "turn-chips", role: "list", "aria-label": gettext("The dispatched Turns") });
  const content = typeof body.content === "string" ? body.content : "";
  const el = h("section", {
    class: "dispatch", role: "group", "aria-label": format(ngettext("%(name)s %(verb)s %(count)s agent", "%(name)s %(verb)s %(count)s agents", targets.length),
      { name: actor.displayName, verb, count: targets.length }),
    dataset: { eventId: env.eventId, type: env.type, operation: body.operation || "" },
  },
  h("header", { class: "dispatch-head" },
    h("span", { class: "dispatch-badge", text: gettext("Operator dispatch") }),
    h("strong", { class: "dispatch-author", text: actor.displayName }),
    h("span", { class: "dispatch-verb", text: verb }),
    h("span", { class: "dispatch-targets", role: "list", "aria-label": gettext("Targets") }, names),
    h("time", { class: "dispatch-time", datetime: env.occurredAt, text: clockTime(env.occurredAt) })),
  h("p", { class: "dispatch-content", title: content.length > 600 ? content : null, text: excerpt(content, 600) }),
  chips);
  timeline.remember(env); // the targets' replies quote it as their request
  timeline.chipRows.set(env.eventId, chips);
  timeline.add(el);
  for (const turn of timeline.ctx.turns.forSource(env.eventId)) timeline.chip(turn);
}

/** The renderers room.js hands the timeline: event type → render(timeline, env). */
export const RENDERERS = new Map([[OPERATOR_DISPATCH, renderOperatorDispatch]]);
