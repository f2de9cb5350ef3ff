// memory_panel.js — the sidebar's collapsible public memory panel (FEATURES §15.1, §17).
//
// Public memory is what every agent's Context Packet carries under [public_memory]: facts,
// decisions and instructions the user wants the whole room to keep. The list is read from
// GET /api/memory and read again whenever a memory.* event for the room scope arrives, so writes
// from agents (memory_remember) and from other tabs show up without a reload.

import { gettext } from "./i18n.js";
import { MemoryList } from "./memory_list.js";

const OPEN_KEY = "groupx.memoryPanel";
const REFRESH_DEBOUNCE_MS = 150; // several memory events in a burst → one read

export const ROOM_SCOPE = { type: "room", id: "room:main" };

function load() {
  try {
    return localStorage.getItem(OPEN_KEY);
  } catch {
    return null;
  }
}

export class MemoryPanel {
  /** @param el {details, body, count} @param actorName(actorId) → display name */
  constructor({ details, body, count }, actorName) {
    this.details = details;
    this.count = count;
    this.timer = null;
    this.list = new MemoryList(body, {
      query: { scopeType: ROOM_SCOPE.type, scopeId: ROOM_SCOPE.id },
      scope: ROOM_SCOPE,
      canReplace: true,
      actorName,
      label: gettext("Public memory"),
      emptyText: gettext("Nothing remembered yet. Add what every agent should keep in mind."),
      addLabel: gettext("New public memory"),
      onCount: (n) => { this.count.textContent = String(n); },
    });
    // Open unless the user closed it last time: the panel is how memory is discovered at all.
    details.open = load() !== "closed";
    details.addEventListener("toggle", () => {
      try {
        localStorage.setItem(OPEN_KEY, details.open ? "open" : "closed");
      } catch {
        /* remembered for this page only */
      }
    });
  }

  refresh() {
    return this.list.refresh();
  }

  /** A durable memory.* envelope: only room-scope records concern this panel. */
  event(env) {
    const record = env.body && env.body.record;
    if (record && record.scope && record.scope.type !== ROOM_SCOPE.type) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.refresh(), REFRESH_DEBOUNCE_MS);
  }
}
