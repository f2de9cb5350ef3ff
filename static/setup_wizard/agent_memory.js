// agent_memory.js — each agent's core and dated memory on Agent Settings (/setup), where FEATURES
// §15.2-3 put them beside the agent's other settings (the room's agent drawer shows the same lists).
//
// One folded group per agent of the running room (GET /api/bootstrap): core memory, which the user
// may add, replace and retract, and dated memory, the agent's own daily notes, read-only and
// grouped by local day. The lists are the room's own (static/rooms/memory_list.js) and load when a
// group is first opened. An agent saved here but not started yet has no memory until the restart.

import { getJson } from "/static/rooms/api.js";
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
    el("summary", { textContent: `${name}'s memory` }),
    el("h3", { textContent: "Core memory" }),
    el("p", { className: "hint", textContent: `Always in ${name}'s context, seen by ${name} only.` }),
    core,
    el("h3", { textContent: "Dated memory" }),
    el("p", { className: "hint", textContent: `${name}'s own daily notes of its finished Turns.` }),
    dated);
  group.dataset.actorId = agent.actorId;
  let lists = null;
  group.addEventListener("toggle", () => {
    if (!group.open) return;
    lists = lists || [
      new MemoryList(core, {
        query: { scopeType: "agent", scopeId: agent.actorId, agentMemoryType: "core" },
        scope: { type: "agent", id: agent.actorId }, canReplace: true, actorName,
        label: `${name}'s core memory`,
        emptyText: `No core memory yet. What should ${name} always keep in mind?`,
        addLabel: `New core memory for ${name}`, addPlaceholder: `Something only ${name} should always know…`,
      }),
      new MemoryList(dated, {
        query: { scopeType: "agent", scopeId: agent.actorId, agentMemoryType: "dated" },
        canReplace: false, actorName, label: `${name}'s dated memory`,
        emptyText: `${name} has not written a daily note yet. Notes appear after finished Turns.`,
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
      textContent: `Could not load the agents' memory: ${error.message}` }));
    section.hidden = false;
  }
}

document.addEventListener("DOMContentLoaded", showAgentMemory);
