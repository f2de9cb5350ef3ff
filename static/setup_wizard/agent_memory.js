// agent_memory.js — each agent's core and dated memory on Agent Settings (/setup), where FEATURES
// §15.2-3 put them beside the agent's other settings (the room's agent drawer shows the same lists).
//
// One folded group per agent of the running room (GET /api/bootstrap): core memory, which the user
// may add, replace and retract, and dated memory, the agent's own daily notes, read-only and
// grouped by local day. The lists are the room's own (static/rooms/memory_list.js) and load when a
// group is first opened. An agent saved here but not started yet has no memory until the restart.

import { getJson } from "/static/rooms/api.js";
import { format, gettext } from "/static/rooms/i18n.js";
import { localDay, MemoryList } from "/static/rooms/memory_list.js";

function el(tag, props = {}, ...children) {
  const node = Object.assign(document.createElement(tag), props);
  node.append(...children);
  return node;
}

function agentGroup(agent, actorName) {
  const name = agent.displayName || agent.actorId;
  const core = el("div", { className: "agent-core" });
  const dated = el("div", { className: "agent-dated" });
  const group = el("details", { className: "agent-memory" },
    el("summary", { textContent: format(gettext("%(name)s's memory"), { name }) }),
    el("h3", { textContent: gettext("Core memory") }),
    el("p", { className: "hint", textContent: format(gettext("Always in %(name)s's context, seen by %(name)s only."), { name }) }),
    core,
    el("h3", { textContent: gettext("Dated memory") }),
    el("p", { className: "hint", textContent: format(gettext("%(name)s's own daily notes of its finished Turns."), { name }) }),
    dated);
  group.dataset.actorId = agent.actorId;
  let lists = null;
  group.addEventListener("toggle", () => {
    if (!group.open) return;
    lists = lists || [
      new MemoryList(core, {
        query: { scopeType: "agent", scopeId: agent.actorId, agentMemoryType: "core" },
        scope: { type: "agent", id: agent.actorId }, canReplace: true, actorName,
        label: format(gettext("%(name)s's core memory"), { name }),
        emptyText: format(gettext("No core memory yet. What should %(name)s always keep in mind?"), { name }),
        addLabel: format(gettext("New core memory for %(name)s"), { name }), addPlaceholder: format(gettext("Something only %(name)s should always know…"), { name }),
      }),
      new MemoryList(dated, {
        query: { scopeType: "agent", scopeId: agent.actorId, agentMemoryType: "dated" },
        canReplace: false, actorName, label: format(gettext("%(name)s's dated memory"), { name }),
        emptyText: format(gettext("%(name)s has not written a daily note yet. Notes appear after finished Turns."), { name }),
        groupBy: (record) => localDay(record.createdAt),
      }),
    ];
    for (const list of lists) list.refresh(); // every opening reads the latest
  });
  return group;
}

async function showAgentMemory() {
  const section = document.getElementById("agent-memory");
  const holder = document.getElementById("agent-memory-list");
  try {
    const room = /** @type {Bootstrap} */ (await getJson("/api/bootstrap"));  // #/components/schemas/Bootstrap
    const names = new Map((room.agents || []).map((agent) => [agent.actorId, agent.displayName]));
    const actorName = (actorId) => names.get(actorId) || actorId;
    holder.replaceChildren(...(room.agents || []).map((agent) => agentGroup(agent, actorName)));
    section.hidden = !(room.agents || []).length;
  } catch (error) {
    holder.replaceChildren(el("p", { className: "mem-error", role: "alert",
      textContent: format(gettext("Could not load the agents' memory: %(reason)s"), { reason: error.message }) }));
    section.hidden = false;
  }
}

document.addEventListener("DOMContentLoaded", showAgentMemory);
