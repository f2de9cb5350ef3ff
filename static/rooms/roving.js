// roving.js — the timeline is one Tab stop; arrow keys move between its messages (a roving tabindex).
//
// Exactly one item (a message or an event line) has tabindex 0; every other item, and every button,
// link or summary inside an item that is not the current one, has tabindex -1. Tab therefore goes
// from the timeline (its current item, then that item's own Reply, Forward, Cancel…) to the
// message box, instead of through every message's buttons. Up/Down, Home/End move the current item.
// Items and their insides change all the time (streaming, paging), so a MutationObserver tames
// whatever is added.

const ITEM = "article.msg, .sys, .dispatch, .thread-toggle";
const FOCUSABLE = "a[href], button, summary, input, select, textarea, [tabindex]";
const TAMED = "rovingTamed";

export class Roving {
  /** @param scroller the timeline (#timeline): the Tab stop when it holds no item yet. */
  constructor(scroller) {
    this.scroller = scroller;
    this.current = null;
    scroller.addEventListener("keydown", (event) => this.onKey(event));
    scroller.addEventListener("focusin", (event) => this.onFocus(event));
    scroller.addEventListener("pointerdown", () => { this.pointing = true; }, { passive: true });
    new MutationObserver((records) => this.onMutations(records))
      .observe(scroller, { childList: true, subtree: true });
  }

  items() {
    return [...this.scroller.querySelectorAll(ITEM)].filter((el) => !el.closest("[hidden]") && !el.parentElement.closest(ITEM));
  }

  itemOf(node) {
    const el = node && node.nodeType === 1 ? node : node && node.parentElement;
    if (!el || !this.scroller.contains(el)) return null;
    let item = el.closest(ITEM);
    // An item inside an item (a chip row in a message) belongs to the outer one.
    while (item && item.parentElement && item.parentElement.closest(ITEM)) item = item.parentElement.closest(ITEM);
    return item;
  }

  onMutations(records) {
    for (const record of records) {
      for (const node of record.addedNodes) if (node.nodeType === 1) this.tame(node);
    }
    const focused = this.current && this.current.contains(document.activeElement);
    if (!focused) {
      const items = this.items();
      const newest = items[items.length - 1] || null;
      if (newest !== this.current) this.setCurrent(newest);
    }
  }

  /** Everything focusable in ``root`` that is not inside the current item leaves the Tab order. */
  tame(root) {
    const inside = root.matches(FOCUSABLE) ? [root, ...root.querySelectorAll(FOCUSABLE)] : [...root.querySelectorAll(FOCUSABLE)];
    for (const el of inside) {
      const item = this.itemOf(el);
      if (!item || el === item || item === this.current) continue;
      if (!(TAMED in el.dataset)) el.dataset[TAMED] = el.getAttribute("tabindex") ?? "";
      el.tabIndex = -1;
    }
    if (root.matches(ITEM) && root !== this.current) root.tabIndex = -1;
    for (const item of root.querySelectorAll(ITEM)) if (item !== this.current) item.tabIndex = -1;
  }

  setCurrent(item) {
    const previous = this.current;
    if (previous === item) return;
    this.current = item;
    if (previous && previous.isConnected) {
      previous.tabIndex = -1;
      this.tame(previous);
    }
    if (item) {
      item.tabIndex = 0;
      for (const el of item.querySelectorAll(FOCUSABLE)) {
        if (!(TAMED in el.dataset)) continue;
        const before = el.dataset[TAMED];
        delete el.dataset[TAMED];
        if (before === "") el.removeAttribute("tabindex");
        else el.setAttribute("tabindex", before);
      }
    }
    // With no item at all, the timeline itself stays reachable (it scrolls by keyboard).
    this.scroller.tabIndex = item ? -1 : 0;
  }

  onFocus(event) {
    const pointing = this.pointing;
    this.pointing = false;
    const item = this.itemOf(event.target);
    if (!item) return;
    this.setCurrent(item);
    // Shift+Tab from below enters on the item itself, as Tab from above does, not on its last button.
    if (!pointing && event.target !== item && !this.scroller.contains(event.relatedTarget)) item.focus();
  }

  onKey(event) {
    if (event.altKey || event.ctrlKey || event.metaKey) return;
    const item = this.itemOf(event.target);
    if (!item || event.target !== item) return; // keys inside a message's own controls are theirs
    const items = this.items();
    const at = items.indexOf(item);
    let next = null;
    if (event.key === "ArrowDown") next = items[at + 1];
    else if (event.key === "ArrowUp") next = items[at - 1];
    else if (event.key === "Home") next = items[0];
    else if (event.key === "End") next = items[items.length - 1];
    else return;
    event.preventDefault();
    if (!next) return;
    this.setCurrent(next);
    next.focus({ preventScroll: true });
    next.scrollIntoView({ block: "nearest" });
  }
}
