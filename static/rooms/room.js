// room.js — the room page's entry point: bootstrap, the event stream, and wiring.
//
// Order matters (FEATURES §10, §17): GET /api/bootstrap first, render its recentEvents and
// activeTurns, then open the stream with afterSeq = room.throughSeq. Events committed between
// the two calls are read by the stream's own tail, so nothing is missed and nothing is doubled.

import { AgentMemory } from "./agent_memory.js";
import { restartAgent } from "./agent_restart.js";
import { getJson, postJson } from "./api.js";
import { AssistantPanel } from "./assistant_panel.js";
import { Attention } from "./attention.js";
import { setRoster } from "./avatars.js";
import { Composer } from "./composer.js";
import { ContextMeter } from "./context_meter.js";
import { ContextReset } from "./context_reset.js";
import { newCommandId } from "./dom.js";
import { SENTENCE_RENDERERS } from "./event_sentences.js";
import { ExportMenu } from "./export.js";
import { History } from "./history.js";
import { gettext } from "./i18n.js";
import { MemoryPanel } from "./memory_panel.js";
import { MentionPicker } from "./mention_picker.js";
import { wireMoreMenu } from "./more_menu.js";
import { RENDERERS } from "./operator_dispatch.js";
import { RoomHealth } from "./room_health.js";
import { Roving } from "./roving.js";
import { ComposerComforts, GoToMenu, StopAll, UnreadMarker } from "./room_comforts.js";
import { SearchBox } from "./search.js";
import { Sidebar } from "./sidebar.js";
import { renderSystemError, SYSTEM_ERROR } from "./system_error.js";
import { backoffDelay, RoomStream } from "./stream.js";
import { isHidden, setEventTypes, Timeline } from "./timeline.js";
import { isTurnLifecycle, TurnStore } from "./turns.js";

const HEALTH_POLL_MS = 60_000;
const STARTING_POLL_MS = 1_000; // while GroupX starts, so the page says "ready" soon after it is
const $ = (id) => document.getElementById(id);

const agents = new Map(); // actorId → bootstrap agent card (live and pending)

function agentActor(actorId) {
  const card = agents.get(actorId);
  const name = card ? card.displayName : String(actorId || "agent").replace(/^agent:/, "");
  return { actorId, kind: "agent", displayName: name };
}

function actorName(actorId) {
  if (actorId === "user:web") return gettext("You");
  if (String(actorId).startsWith("agent:")) return agentActor(actorId).displayName;
  return String(actorId || "").replace(/^(user|system):/, "");
}

const turns = new TurnStore((turn) => {
  timeline.turnChanged(turn);
  scheduleActivity(turn.target);
  stopAll.schedule();
});

const timeline = new Timeline(
  { scroller: $("timeline"), durable: $("durable"), live: $("live"), jump: $("jump") },
  {
    turns,
    agentActor,
    onReply: (env) => composer.setReference("reply", env),
    onForward: (env) => composer.setReference("forward", env),
    onCancel: cancelTurn,
    onActivity: scheduleActivity,
    onLatest: () => boot(),
    // Event types with a renderer of their own: sentences for the room's events (event_sentences.js),
    // then the assistant's dispatches and failures outside a Turn, which win.
    renderers: new Map([...SENTENCE_RENDERERS, ...RENDERERS, [SYSTEM_ERROR, renderSystemError]]),
  },
);

// The whole history: older pages on scroll-up, search that jumps to a message, Markdown export.
const roomHistory = new History({ scroller: $("timeline"), note: $("history-note"), jump: $("jump") }, timeline);
wireMoreMenu($("more-menu"), $("search-input"));
new SearchBox({ form: $("search"), input: $("search-input"), results: $("search-results") },
  { onPick: (hit) => roomHistory.reveal(hit) });
new GoToMenu({ menu: $("goto"), start: $("goto-start"), date: $("goto-date"), go: $("goto-date-go"), note: $("goto-note") },
  roomHistory);
new Roving($("timeline")); // the timeline is one Tab stop; arrows move inside it
const unread = new UnreadMarker(timeline);
new ExportMenu({ menu: $("export"), from: $("export-from"), to: $("export-to"), link: $("export-link"),
  hint: $("export-hint") });

const agentMemory = new AgentMemory(
  { drawer: $("agent-memory"), title: $("agent-memory-title"), close: $("agent-memory").querySelector(".drawer-close"),
    core: $("agent-core"), dated: $("agent-dated") },
  actorName,
);

const sidebar = new Sidebar({ list: $("agent-list"), count: $("agent-count") }, {
  onMemory: (actorId, button) => agentMemory.open(actorId, button),
  onRestart: (actorId, name, button) => restartAgent(sidebar, actorId, name, button),
});

const memoryPanel = new MemoryPanel({ details: $("memory-panel"), body: $("memory-body"), count: $("memory-count") }, actorName);

const meterRoot = $("context-meter");
const contextMeter = new ContextMeter({
  root: meterRoot, text: meterRoot.querySelector(".meter-text"), bar: meterRoot.querySelector(".meter-bar"),
  fill: meterRoot.querySelector(".meter-fill"), percent: meterRoot.querySelector(".meter-percent"),
  compact: meterRoot.querySelector(".meter-compact"), status: $("compaction-status"),
});
new ContextReset(meterRoot.querySelector(".meter-reset"), contextMeter);

const composer = new Composer(
  {
    form: $("composer"), input: $("message-input"), send: $("send"), chips: $("recipient-chips"),
    counter: $("char-count"), hint: $("composer-hint"), context: $("context-bar"), error: $("composer-error"),
    mentionWarning: $("mention-warning"), toSummary: $("to-toggle"),
  },
  {
    onSent(reply) {
      // Chips appear at once; the stream confirms them (and the message) moments later.
      for (const turn of reply.turns || []) {
        turns.hint(turn.turnId, { target: turn.target, sourceEventId: reply.messageEventId, status: turn.status });
      }
      timeline.follow();
      comforts.grow(); // the composer emptied the box
    },
  },
);

new MentionPicker($("message-input"), {
  agents: () => composer.agents,
  onPick: (actorId) => composer.address(actorId),
});
// A box that grows with its text; Up in an empty box brings back the last message sent.
const comforts = new ComposerComforts($("message-input"), () => timeline.lastOwn);

// The private side chat with the room assistant: never a room message (FEATURES §13).
const assistantRoot = $("assistant-panel");
const assistantPanel = new AssistantPanel({
  panel: assistantRoot, toggle: $("assistant-toggle"), collapse: assistantRoot.querySelector(".assistant-collapse"),
  title: $("assistant-title"), status: $("assistant-status"), detail: $("assistant-detail"), log: $("assistant-log"),
  form: $("assistant-form"), input: $("assistant-input"), sendButton: $("assistant-send"),
  stopButton: $("assistant-stop"), error: $("assistant-error"),
});
assistantPanel.start();

const attention = new Attention($("notify-toggle"), {
  turnAgent: (env) => actorName((turns.get(env.body && env.body.turnId) || {}).target || (env.to && env.to[0])),
});

// ---- sidebar activity: recomputed at most once a frame per agent ------------------------------

const activityDirty = new Set();
function scheduleActivity(actorId) {
  if (!actorId) return;
  if (!activityDirty.size) requestAnimationFrame(flushActivity);
  activityDirty.add(actorId);
}

function flushActivity() {
  for (const actorId of activityDirty) {
    const { current, queued } = turns.activity(actorId);
    let text = null;
    if (current && current.status === "dispatching") text = gettext("Starting a Turn");
    else if (current && current.status === "cancelling") text = gettext("Cancelling");
    else if (current) text = timeline.activityFor(current.turnId) || gettext("Working");
    sidebar.setActivity(actorId, { busy: Boolean(current), text, queued });
  }
  activityDirty.clear();
}

// ---- cancel -------------------------------------------------------------------------------------

async function cancelTurn(turnId) {
  const turn = turns.get(turnId);
  const before = turn && turn.status;
  if (turn) {
    turn.cancelError = null;
    turns.hint(turnId, { status: "cancelling" });
  }
  // CancelBody → CancelAccepted (api.js)
  const reply = await postJson(`/api/turns/${encodeURIComponent(turnId)}/cancel`,
    /** @type {CancelBody} */ ({ clientCommandId: newCommandId() }));
  if (reply.ok) {
    turns.hint(turnId, { status: reply.data.status });
  } else if (turn) {
    // Show why on the chip; the stream still brings the real status.
    turn.cancelError = `${reply.error.code}: ${reply.error.message}`;
    if (turn.status === "cancelling" && before !== "cancelling") turn.status = before;
    timeline.turnChanged(turn);
  }
}

// "Stop all" while Turns run: the same cancel command per Turn as each chip's Cancel.
const stopAll = new StopAll($("stop-all"), turns, cancelTurn);

// ---- events ---------------------------------------------------------------------------------------

function onDurable(env) {
  if (isHidden(env.type)) return;
  if (isTurnLifecycle(env.type)) turns.apply(env); // statuses first, so chips render correctly
  if (env.type.startsWith("session.")) sidebar.session(env);
  if (env.type === "turn.completed") sidebar.turnCompleted(env.actor.actorId);
  if (env.type === SYSTEM_ERROR) sidebar.systemError(env);
  if (env.type.startsWith("memory.")) {
    memoryPanel.event(env);
    agentMemory.event(env);
  }
  // Anything that changes what a Context Packet would carry changes the meter.
  if (env.type === "message.created" || env.type.startsWith("context.") || env.type.startsWith("memory.")) {
    contextMeter.schedule();
  }
  timeline.applyDurable(env);
  unread.seen(env);
}

function onTransient(env) {
  if (isHidden(env.type)) return;
  if (env.type === "session.retrying") sidebar.session(env);
  else if (env.type.startsWith("context.compaction.")) contextMeter.progress(env);
  else timeline.applyTransient(env);
}

// ---- connection state ---------------------------------------------------------------------------

const CONNECTION_TEXT = {
  connecting: gettext("Connecting…"), live: gettext("Live"), reconnecting: gettext("Reconnecting…"), offline: gettext("Offline"),
};
function setConnection(state) {
  const pill = $("connection");
  pill.dataset.state = state;
  pill.querySelector(".connection-text").textContent = CONNECTION_TEXT[state] || state;
  if (state === "live") { // statuses may have changed while we were away
    pollHealth();
    composer.streamBack();
    assistantPanel.refreshStatus();
  }
}

// Only events that arrive on the stream are news for the title and notifications.
const onStreamed = (env) => {
  onDurable(env);
  attention.event(env);
};
window.addEventListener("online", () => composer.streamBack()); // the network is back, stream or not
const stream = new RoomStream({ onDurable: onStreamed, onTransient, onReset: () => boot(), onState: setConnection });

// ---- bootstrap ------------------------------------------------------------------------------------

let booting = null;
function boot() {
  booting = booting || bootOnce().finally(() => { booting = null; });
  return booting;
}

async function bootOnce() {
  stream.stop();
  let snapshot;
  // The first snapshot was asked for by boot_fetch.js while this module graph loaded.
  let early = window.groupxBootstrap;
  window.groupxBootstrap = null;
  for (let attempt = 0; ; attempt += 1) {
    try {
      snapshot = /** @type {Bootstrap} */ (await (early || getJson("/api/bootstrap")));
      break;
    } catch {
      early = null;
      setConnection("offline");
      await new Promise((resolve) => setTimeout(resolve, backoffDelay(attempt)));
    }
  }
  setEventTypes(snapshot.eventTypes);
  agents.clear();
  // pendingAgents: saved through /setup after start; named in the page, never a recipient.
  const pending = snapshot.pendingAgents || [];
  for (const card of pending) agents.set(card.actorId, card);
  for (const card of snapshot.agents || []) agents.set(card.actorId, card);
  // Before anything is drawn: initials and colours for the whole room, in the sidebar's order.
  setRoster([...(snapshot.agents || []), ...pending]);
  sidebar.setAgents(snapshot.agents || [], pending);
  composer.setAgents(snapshot.agents || []);
  turns.reset();
  timeline.reset({ hasOlder: Boolean(snapshot.previousPage) });
  timeline.rememberReferences(snapshot.referencedMessages);
  unread.beforeBoot();
  for (const env of snapshot.recentEvents || []) onDurable(env);
  unread.afterBoot();
  turns.applySnapshot(snapshot.activeTurns);
  timeline.restoreActive(turns.active());
  for (const actorId of agents.keys()) scheduleActivity(actorId);
  timeline.follow();
  roomHistory.reset();
  // Memory and usage are read after the snapshot: an event landing between the two reads only
  // triggers one more (idempotent) read, so nothing is missed.
  await Promise.all([memoryPanel.refresh(), contextMeter.refresh()]);
  if (agentMemory.isOpen && !agents.has(agentMemory.actorId)) agentMemory.hide();
  stopAll.schedule();
  document.body.dataset.ready = "true";
  stream.start(snapshot.room.throughSeq);
}

// ---- health: every 60 s, and whenever the stream comes back --------------------------------------

const roomHealth = new RoomHealth($("room-health"));
let healthInFlight = false;
async function pollHealth() {
  if (healthInFlight) return;
  healthInFlight = true;
  try {
    const health = /** @type {HealthReport} */ (await getJson("/api/health"));
    if (roomHealth.show(health)) setTimeout(pollHealth, STARTING_POLL_MS);
    const ids = (health.agents || []).map((a) => a.actorId).sort().join();
    if (ids !== sidebar.ids().sort().join() && !booting) {
      boot(); // the roster changed (a restart with a new config): take a fresh snapshot
    } else {
      sidebar.health(health.agents || []);
    }
  } catch {
    /* the stream's own reconnect reports the outage */
  } finally {
    healthInFlight = false;
  }
}
setInterval(pollHealth, HEALTH_POLL_MS);

// ---- theme and the narrow-screen agent panel -------------------------------------------------------

function currentTheme() {
  return document.documentElement.dataset.theme
    || (matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light");
}

function paintThemeButton() {
  const next = currentTheme() === "dark" ? "light" : "dark";
  const button = $("theme-toggle");
  const label = next === "dark" ? gettext("Switch to the dark theme") : gettext("Switch to the light theme");
  button.setAttribute("aria-label", label);
  button.title = label;
  button.querySelector(".theme-icon").textContent = next === "dark" ? "☾" : "☀";
}

$("theme-toggle").addEventListener("click", () => {
  const next = currentTheme() === "dark" ? "light" : "dark";
  document.documentElement.dataset.theme = next;
  try {
    localStorage.setItem("groupx.theme", next);
  } catch {
    /* the choice lasts for this page only */
  }
  paintThemeButton();
});
matchMedia("(prefers-color-scheme: dark)").addEventListener("change", paintThemeButton);
paintThemeButton();

$("agents-toggle").addEventListener("click", () => {
  const open = document.body.classList.toggle("agents-open");
  $("agents-toggle").setAttribute("aria-expanded", String(open));
});

boot();
