// event_sentences.js — the room's own events in words ("You reset the room's context").
//
// Each renderer takes (timeline, env), as the timeline's ctx.renderers expects. Bookkeeping that
// comes in runs (memory and identity notes: five "replaced … dated note" in a row after a rollup)
// folds into one quiet line that counts them. An error code is never the sentence: it sits under a
// "details" disclosure after it. Event types nobody wrote a sentence for keep the timeline's
// generic line (FEATURES §8).

import { excerpt, h } from "./dom.js";

const MEMORY_VERBS = {
  "memory.remembered": "remembered", "memory.superseded": "replaced", "memory.retracted": "retracted",
  "identity.remembered": "saved", "identity.superseded": "replaced", "identity.retracted": "retracted",
};
const COMMANDS = { send: "message to other agents", ask: "question to another agent" };

/** The person at this page: the web user, or the system acting on a request from the page (a
 * context reset is written by GroupX itself, its provenance says the web asked). */
function isYou(env) {
  const actor = env.actor || {};
  if (actor.actorId === "user:web") return true;
  return String(actor.actorId).startsWith("system:") && Boolean(env.provenance) && env.provenance.sourceKind === "web";
}

/** The actor shown at the head of a line: null for the person ("You" is part of the sentence). */
function who(env) {
  return isYou(env) ? null : env.actor;
}

function subject(env) {
  return isYou(env) ? "You" : "";
}

/** A "details" disclosure holding the code and the server's message, after the sentence. */
export function detailsOf(code, message) {
  if (!code && !message) return null;
  return h("details", { class: "sys-details" }, h("summary", { text: "details" }),
    code ? h("code", { text: code }) : null, message ? ` ${message}` : null);
}

function sentenceLine(timeline, env, text, { tone = "muted", code = null, message = null } = {}) {
  const el = timeline.line(env, who(env), `${subject(env)}${subject(env) ? " " : ""}${text}`, tone);
  el.classList.add("sys--sentence");
  const details = detailsOf(code, message);
  if (details) el.querySelector(".sys-text").after(details);
  timeline.add(el);
  return el;
}

function renderContextReset(timeline, env) {
  const body = env.body || {};
  const fresh = body.resetNativeSessions ? " and started every agent on a fresh session" : "";
  sentenceLine(timeline, env, `reset the room's context${fresh}: agents no longer see what was said before`);
}

function renderLoopStopped(timeline, env) {
  const body = env.body || {};
  const what = COMMANDS[body.commandType] || "message";
  sentenceLine(timeline, env, `could not send its ${what}: the chain of agents answering agents reached its limit`,
    { tone: "err", code: body.errorCode, message: body.message });
}

/** Any system error (a renderer of its own may replace this one): a sentence, the code in details. */
function renderSystemError(timeline, env) {
  const body = env.body || {};
  const text = typeof body.summary === "string" ? body.summary : "GroupX hit an error";
  sentenceLine(timeline, env, text, { tone: "err", code: body.errorCode || body.code, message: body.message });
}

/** "You remembered a public fact: …"; a run of the same change by the same author on the same
 * scope folds into one line: "Kimi replaced 5 dated notes". */
function renderRecord(timeline, env) {
  const record = env.body.record;
  const identity = env.type.startsWith("identity.");
  const verb = MEMORY_VERBS[env.type] || env.type.split(".").pop();
  const scope = identity ? "an identity"
    : record.scope && record.scope.type === "agent"
      ? `${timeline.ctx.agentActor(record.scope.id).displayName}'s ${record.agentMemoryType || "core"}` : "a public";
  const kind = identity ? "note" : record.kind;
  const key = `${env.type}|${env.actor.actorId}|${scope}|${kind}`;
  const last = timeline.durable.lastElementChild;
  if (last && last.dataset.foldKey === key) {
    const count = Number(last.dataset.count) + 1;
    last.dataset.count = String(count);
    const plural = scope.startsWith("a ") || scope.startsWith("an ") ? `${count} ${scope.replace(/^an? /, "")}` : `${count} of ${scope}`;
    last.querySelector(".sys-text").textContent = ` ${subject(env)}${subject(env) ? " " : ""}${verb} ${plural} ${kind}s`;
    last.title = `${last.title}\n${excerpt(record.content, 120)}`;
    last.dataset.eventId = env.eventId;
    return;
  }
  const el = sentenceLine(timeline, env, `${verb} ${scope} ${kind}: ${excerpt(record.content, 120)}`);
  el.classList.add(identity ? "sys--identity" : "sys--memory");
  el.dataset.foldKey = key;
  el.dataset.count = "1";
  el.title = excerpt(record.content, 120);
}

const recordTypes = Object.keys(MEMORY_VERBS).map((type) => [type, (timeline, env) =>
  ((env.body && env.body.record) ? renderRecord : (t, e) => t.generic(e))(timeline, env)]);

/** Sentences for the room's own event types; room.js lets a specific renderer override any. */
export const SENTENCE_RENDERERS = new Map([
  ["context.reset", renderContextReset],
  ["routing.loop_stopped", renderLoopStopped],
  ["system.error", renderSystemError],
  ...recordTypes,
]);
