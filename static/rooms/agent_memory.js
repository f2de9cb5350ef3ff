// agent_memory.js — the drawer behind an agent card's "Memory" button (FEATURES §15.2, §15.3, §17).
//
// Core memory is the small curated set only this agent sees, first among the optional parts of
// its Context Packet: the user may add, replace and retract it. Dated memory is the agent's own
// daily rollup of its finished Turns; nobody else may write it, so here it is read-only, grouped
// by the local date it was written, and can only be retracted.

import { format, gettext } from "./i18n.js";
import { localDay, MemoryList } from "./memory_list.js";

const REFRESH_DEBOUNCE_MS = 150;

export class AgentMemory {
  /** @param el {drawer, title, close, core, dated} @param actorName(actorId) → display name */
  constructor(el, actorName) {
    Object.assign(this, el);
    this.actorName = actorName;
    this.actorId = null;
    this.opener = null;
    this.timer = null;
    this.close.addEventListener("click", () => this.hide());
    // On the document, not the drawer: after a retract re-renders the list, focus may be on <body>.
    document.addEventListener("keydown", (event) => {
      if (event.key === "Escape" && this.isOpen && !event.defaultPrevented) this.hide();
    });
  }

  get isOpen() {
    return !this.drawer.hidden;
  }

  open(actorId, opener = null) {
    this.actorId = actorId;
    this.opener = opener;
    const scope = { type: "agent", id: actorId };
    const name = this.actorName(actorId);
    this.drawer.dataset.actorId = actorId;
    this.title.textContent = format(gettext("%(name)s's memory"), { name });
    this.coreList = new MemoryList(this.core, {
      query: { scopeType: "agent", scopeId: actorId, agentMemoryType: "core" },
      scope,
      canReplace: true,
      actorName: this.actorName,
      label: format(gettext("%(name)s's core memory"), { name }),
      emptyText: format(gettext("No core memory yet. What should %(name)s always keep in mind?"), { name }),
      addLabel: format(gettext("New core memory for %(name)s"), { name }),
      addPlaceholder: format(gettext("Something only %(name)s should always know…"), { name }),
    });
    this.datedList = new MemoryList(this.dated, {
      query: { scopeType: "agent", scopeId: actorId, agentMemoryType: "dated" },
      canReplace: false,
      actorName: this.actorName,
      label: format(gettext("%(name)s's dated memory"), { name }),
      emptyText: format(gettext("%(name)s has not written a daily note yet. Notes appear after finished Turns."), { name }),
      groupBy: (record) => localDay(record.createdAt),
    });
    this.drawer.hidden = false;
    document.body.classList.add("drawer-open");
    this.title.focus();
    return Promise.all([this.coreList.refresh(), this.datedList.refresh()]);
  }

  hide() {
    if (!this.isOpen) return;
    this.drawer.hidden = true;
    document.body.classList.remove("drawer-open");
    this.actorId = null;
    if (this.opener && this.opener.isConnected) this.opener.focus(); // back where the user was
  }

  /** A durable memory.* envelope: re-read when it is about the agent on show. */
  event(env) {
    const record = env.body && env.body.record;
    if (!this.isOpen || !record || !record.scope) return;
    if (record.scope.type !== "agent" || record.scope.id !== this.actorId) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      if (!this.isOpen) return;
      this.coreList.refresh();
      this.datedList.refresh();
    }, REFRESH_DEBOUNCE_MS);
  }
}
