// event_sentences.js — the room's own events in words ("You reset the room's context").
//
// Each renderer takes (timeline, env), as the timeline's ctx.renderers expects. Bookkeeping that
// comes in runs (memory and identity notes: five "replaced … dated note" in a row after a rollup)
// folds into one quiet line that counts them. An error code is never the sentence: it sits under a
// "details" disclosure after it. Event types nobody wrote a sentence for keep the timeline's
// generic line (FEATURES §8). Every sentence is the reader's language (i18n.js); what people and
// agents wrote is quoted as it is.

import { excerpt, h } from "./dom.js";
import { format, gettext } from "./i18n.js";

const MEMORY_VERBS = {
  "memory.remembered": gettext("remembered"), "memory.superseded": gettext("replaced"),
  "memory.retracted": gettext("retracted"), "identity.remembered": gettext("saved"),
  "identity.superseded": gettext("replaced"), "identity.retracted": gettext("retracted"),
};
// A memory record's kind (memory_list.js KINDS), one and several.
const KIND_NAMES = {
  fact: [gettext("fact"), gettext("facts")],
  decision: [gettext("decision"), gettext("decisions")],
  preference: [gettext("preference"), gettext("preferences")],
  instruction: [gettext("instruction"), gettext("instructions")],
  constraint: [gettext("constraint"), gettext("constraints")],
  note: [gettext("note"), gettext("notes")],
};
/** A memory record's kind in words ("fact"), the code itself for a kind this page does not know. */
export function kindName(kind) {
  return (KIND_NAMES[kind] || [kind])[0];
}

const AGENT_MEMORY_TYPES = { core: gettext("core"), dated: gettext("dated") };

// A card and a session row say what went wrong in words; the code is under "details".
const ERROR_SENTENCES = {
  ADAPTER_NOT_FOUND: gettext("Its CLI was not found on this computer."),
  ADAPTER_START_FAILED: gettext("Its CLI could not be started."),
  PROTOCOL_HANDSHAKE_TIMEOUT: gettext("Its CLI did not answer when GroupX connected to it."),
  PROTOCOL_INVALID_MESSAGE: gettext("Its CLI sent something GroupX could not read."),
  SESSION_NOT_AVAILABLE: gettext("Its CLI session was not available."),
  NATIVE_RESUME_UNSUPPORTED: gettext("Its CLI could not continue its earlier session."),
  NATIVE_POLICY_BLOCKED: gettext("Its CLI's own settings blocked the work."),
  TURN_FIRST_EVENT_TIMEOUT: gettext("Its CLI did not start answering in time."),
  TURN_IDLE_TIMEOUT: gettext("Its CLI went quiet for too long."),
  TURN_INTERRUPTED: gettext("Its work was interrupted."),
};

/** Whether a code has a sentence of its own (else the server's message says more). */
export function explains(code) {
  return code in ERROR_SENTENCES;
}

/** "Its CLI could not be started."; a code nobody wrote a sentence for reads as a problem. */
export function errorSentence(code) {
  return ERROR_SENTENCES[code] || gettext("Its CLI ran into a problem.");
}

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

/** The sentence as the person's own ("You …") or after the actor's name. */
function said(env, text) {
  return isYou(env) ? format(gettext("You %(did)s"), { did: text }) : text;
}

/** A "details" disclosure holding the code and the server's message, after the sentence. */
export function detailsOf(code, message) {
  if (!code && !message) return null;
  return h("details", { class: "sys-details" }, h("summary", { text: gettext("details") }),
    code ? h("code", { text: code }) : null, message ? ` ${message}` : null);
}

function sentenceLine(timeline, env, text, { tone = "muted", code = null, message = null } = {}) {
  const el = timeline.line(env, who(env), said(env, text), tone);
  el.classList.add("sys--sentence");
  const details = detailsOf(code, message);
  if (details) el.querySelector(".sys-text").after(details);
  timeline.add(el);
  return el;
}

function renderContextReset(timeline, env) {
  const body = env.body || {};
  sentenceLine(timeline, env, body.resetNativeSessions
    ? gettext("reset the room's context and started every agent on a fresh session: agents no longer see what was said before")
    : gettext("reset the room's context: agents no longer see what was said before"));
}

function renderLoopStopped(timeline, env) {
  const body = env.body || {};
  const text = {
    send: gettext("could not send its message to other agents: the chain of agents answering agents reached its limit"),
    ask: gettext("could not send its question to another agent: the chain of agents answering agents reached its limit"),
  }[body.commandType] || gettext("could not send its message: the chain of agents answering agents reached its limit");
  sentenceLine(timeline, env, text, { tone: "err", code: body.errorCode, message: body.message });
}

/** Any system error (a renderer of its own may replace this one): a sentence, the code in details. */
function renderSystemError(timeline, env) {
  const body = env.body || {};
  const text = typeof body.summary === "string" ? body.summary : gettext("GroupX hit an error");
  sentenceLine(timeline, env, text, { tone: "err", code: body.errorCode || body.code, message: body.message });
}

/** Whose record: one ("a public", "Kimi's core") and several ("public", "of Kimi's core"). */
function scopeOf(timeline, record, identity) {
  if (identity) return [gettext("an identity"), gettext("identity")];
  if (record.scope && record.scope.type === "agent") {
    const values = { name: timeline.ctx.agentActor(record.scope.id).displayName,
      type: AGENT_MEMORY_TYPES[record.agentMemoryType || "core"] || record.agentMemoryType };
    return [format(gettext("%(name)s's %(type)s"), values), format(gettext("of %(name)s's %(type)s"), values)];
  }
  return [gettext("a public"), gettext("public")];
}

/** "You remembered a public fact: …"; a run of the same change by the same author on the same
 * scope folds into one line: "Kimi replaced 5 dated notes". */
function renderRecord(timeline, env) {
  const record = env.body.record;
  const identity = env.type.startsWith("identity.");
  const verb = MEMORY_VERBS[env.type] || env.type.split(".").pop();
  const [scope, scopes] = scopeOf(timeline, record, identity);
  const kind = identity ? "note" : record.kind;
  const [one, several] = KIND_NAMES[kind] || [kind, `${kind}s`];
  const key = `${env.type}|${env.actor.actorId}|${scope}|${kind}`;
  const last = timeline.durable.lastElementChild;
  if (last && last.dataset.foldKey === key) {
    const count = Number(last.dataset.count) + 1;
    last.dataset.count = String(count);
    last.querySelector(".sys-text").textContent = ` ${said(env, format(gettext("%(verb)s %(count)s %(scopes)s %(kinds)s"),
      { verb, count, scopes, kinds: several }))}`;
    last.title = `${last.title}\n${excerpt(record.content, 120)}`;
    last.dataset.eventId = env.eventId;
    return;
  }
  const el = sentenceLine(timeline, env, format(gettext("%(verb)s %(scope)s %(kind)s: %(content)s"),
    { verb, scope, kind: one, content: excerpt(record.content, 120) }));
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
