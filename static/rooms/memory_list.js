// memory_list.js — one list of memory records with add, replace and retract (FEATURES §15, §17).
//
// Used three times: public room memory in the sidebar, and an agent's core and dated memory in
// the agent drawer. Records are immutable (a replace writes a new record with a new memoryId), so
// an item's element is kept across refreshes by memoryId: a live event that refreshes the list
// never throws away a replace editor or a retract confirmation the user has open.

import { getJson, postJson } from "./api.js";
import { clockTime, h, newCommandId } from "./dom.js";
import { kindName } from "./event_sentences.js";
import { format, gettext } from "./i18n.js";

export const KINDS = ["fact", "decision", "preference", "instruction", "constraint", "note"];
const LIST_LIMIT = 500; // the API's maximum page; more active records than this is not a UI case

/** Mints clientCommandIds: a retry of the *same* write after a failure reuses its id (the server
 * may have applied a request whose answer was lost), anything else gets a fresh one. */
class CommandIds {
  constructor() {
    this.failed = new Map(); // write key → clientCommandId of its last failed attempt
  }

  async post(url, body) {
    const key = `${url} ${JSON.stringify(body)}`;
    const id = this.failed.get(key) || newCommandId();
    const reply = await postJson(url, { clientCommandId: id, ...body });
    if (reply.ok) this.failed.delete(key);
    else this.failed.set(key, id);
    return reply;
  }
}

const commands = new CommandIds();

// MemoryWriteBody, MemorySupersedeBody and RetractBody → MemoryResult (api.js); CommandIds adds
// the clientCommandId.
export function rememberMemory(scope, kind, content) {
  return commands.post("/api/memory", { scope, kind, content });
}

export function supersedeMemory(memoryId, kind, content) {
  return commands.post(`/api/memory/${encodeURIComponent(memoryId)}/supersede`, { kind, content });
}

export function retractMemory(memoryId) {
  return commands.post(`/api/memory/${encodeURIComponent(memoryId)}/retract`, {});
}

export function kindSelect(label, value = "fact") {
  const select = h("select", { class: "mem-kind-select", "aria-label": label },
    ...KINDS.map((kind) => h("option", { value: kind, text: kindName(kind) })));
  select.value = value;
  return select;
}

function errorText(error) {
  return [h("code", { text: error.code }), " ", error.message || ""];
}

/** "Thu, 12 Jun 2025" in the browser's own time zone: dated memory is grouped by local day. */
export function localDay(iso) {
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return gettext("Unknown date");
  return date.toLocaleDateString([], { weekday: "short", year: "numeric", month: "short", day: "numeric" });
}

export class MemoryList {
  /**
   * @param root element the list renders into
   * @param options {query: {scopeType, scopeId, agentMemoryType?}, scope?: {type, id} (shows the
   *   add form), canReplace, actorName(actorId), emptyText, label, groupBy?(record) → heading,
   *   onCount?(n)}
   */
  constructor(root, options) {
    this.root = root;
    this.options = options;
    this.items = new Map(); // memoryId → {record, el}
    this.generation = 0;
    this.list = h("ul", { class: "mem-list", "aria-label": options.label });
    this.empty = h("p", { class: "mem-empty", text: options.emptyText });
    this.loadError = h("p", { class: "mem-error", role: "alert", hidden: true });
    this.root.replaceChildren(this.list, this.empty, this.loadError);
    if (options.scope) this.root.append(this.addForm());
  }

  // ---- reading -------------------------------------------------------------------------------

  async refresh() {
    const generation = ++this.generation; // answers may come back out of order: keep the newest
    let items;
    try {
      const query = new URLSearchParams({ ...this.options.query, limit: String(LIST_LIMIT) });
      items = /** @type {MemoryPage} */ (await getJson(`/api/memory?${query}`)).items || [];
    } catch (error) {
      if (generation !== this.generation) return;
      this.loadError.textContent = format(gettext("Could not load memory: %(reason)s"), { reason: error.message });
      this.loadError.hidden = false;
      return;
    }
    if (generation !== this.generation) return;
    this.loadError.hidden = true;
    this.render(items.filter((record) => record.status === "active"));
  }

  render(records) {
    const keep = new Map();
    const children = [];
    let heading = null;
    for (const record of records) {
      // Newest first, as the API returns them; a group heading starts each new local day.
      const group = this.options.groupBy ? this.options.groupBy(record) : null;
      if (group !== null && group !== heading) {
        heading = group;
        children.push(h("li", { class: "mem-day", role: "presentation", text: group }));
      }
      const existing = this.items.get(record.memoryId);
      const item = existing || { record, el: this.itemElement(record) };
      keep.set(record.memoryId, item);
      children.push(item.el);
    }
    this.items = keep;
    this.list.replaceChildren(...children);
    this.empty.hidden = records.length > 0;
    if (this.options.onCount) this.options.onCount(records.length);
  }

  // ---- one record ----------------------------------------------------------------------------

  itemElement(record) {
    const { actorName, canReplace } = this.options;
    const author = record.authorActorId === "user:web" ? gettext("You") : actorName(record.authorActorId);
    const error = h("p", { class: "mem-error", role: "alert", hidden: true });
    const actions = h("div", { class: "mem-actions" });
    const el = h("li", { class: "mem-item", dataset: { memoryId: record.memoryId, kind: record.kind } },
      h("div", { class: "mem-head" },
        h("span", { class: "mem-kind", text: kindName(record.kind) }),
        h("span", { class: "mem-author", text: author }),
        h("time", { class: "mem-time", datetime: record.createdAt || "", title: record.createdAt || "",
          text: clockTime(record.createdAt) })),
      // Text nodes only: memory written by a person or an agent is never markup (FEATURES §17).
      h("p", { class: "mem-content", text: record.content }),
      actions, error);
    const showActions = () => {
      actions.replaceChildren(
        canReplace ? h("button", { type: "button", class: "link-btn", text: gettext("Replace"),
          "aria-label": format(gettext("Replace this %(kind)s"), { kind: kindName(record.kind) }),
          onclick: () => this.openEditor(record, el, actions, error) }) : null,
        h("button", { type: "button", class: "link-btn link-btn--danger", text: gettext("Retract"),
          "aria-label": format(gettext("Retract this %(kind)s"), { kind: kindName(record.kind) }),
          onclick: () => this.confirmRetract(record, actions, error, showActions) }));
    };
    showActions();
    el.showActions = showActions;
    return el;
  }

  /** Retract is a tombstone, but it takes the record out of every later Context Packet: ask first. */
  confirmRetract(record, actions, error, showActions) {
    const yes = h("button", { type: "button", class: "mem-btn mem-btn--danger", text: gettext("Yes, retract") });
    const no = h("button", { type: "button", class: "mem-btn", text: gettext("Keep"), onclick: showActions });
    yes.addEventListener("click", async () => {
      yes.disabled = no.disabled = true;
      const reply = await retractMemory(record.memoryId);
      if (reply.ok) {
        error.hidden = true;
        this.refresh();
      } else {
        error.replaceChildren(...errorText(reply.error));
        error.hidden = false;
        yes.disabled = no.disabled = false;
      }
    });
    actions.replaceChildren(h("span", { class: "mem-confirm-text", text: gettext("Retract it? Agents stop seeing it.") }), yes, no);
    no.focus();
  }

  openEditor(record, el, actions, error) {
    const kind = kindSelect(gettext("Kind of the new version"), record.kind);
    const text = h("textarea", { class: "mem-input", rows: "3", "aria-label": gettext("New content") });
    text.value = record.content;
    const save = h("button", { type: "submit", class: "mem-btn mem-btn--primary", text: gettext("Save") });
    const cancel = h("button", { type: "button", class: "mem-btn", text: gettext("Cancel") });
    const form = h("form", { class: "mem-edit", "aria-label": gettext("Replace the memory") },
      text, h("div", { class: "mem-form-row" }, kind, save, cancel));
    const close = () => {
      form.remove();
      actions.hidden = false;
      el.showActions();
    };
    cancel.addEventListener("click", close);
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      if (!text.value.trim()) return;
      save.disabled = true;
      const reply = await supersedeMemory(record.memoryId, kind.value, text.value);
      save.disabled = false;
      if (reply.ok) {
        error.hidden = true;
        close();
        this.refresh();
      } else {
        error.replaceChildren(...errorText(reply.error));
        error.hidden = false;
      }
    });
    actions.hidden = true;
    el.insertBefore(form, error);
    text.focus();
  }

  // ---- adding --------------------------------------------------------------------------------

  addForm() {
    const kind = kindSelect(gettext("Kind"));
    const text = h("textarea", { class: "mem-input", rows: "2", "aria-label": this.options.addLabel || gettext("New memory"),
      placeholder: this.options.addPlaceholder || gettext("Something every agent should know…") });
    const add = h("button", { type: "submit", class: "mem-btn mem-btn--primary", text: gettext("Remember"), disabled: true });
    const error = h("p", { class: "mem-error", role: "alert", hidden: true });
    text.addEventListener("input", () => { add.disabled = !text.value.trim(); });
    const form = h("form", { class: "mem-add", "aria-label": gettext("Add a memory") },
      text, h("div", { class: "mem-form-row" }, kind, add), error);
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      if (!text.value.trim()) return;
      add.disabled = true;
      const reply = await rememberMemory(this.options.scope, kind.value, text.value);
      if (reply.ok) {
        text.value = "";
        error.hidden = true;
        this.refresh();
      } else {
        error.replaceChildren(...errorText(reply.error));
        error.hidden = false;
      }
      add.disabled = !text.value.trim();
    });
    return form;
  }
}
