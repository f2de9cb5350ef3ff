// live_markdown.js — the streamed text of a working agent, shown as Markdown while it grows.
//
// Each update re-renders the whole text so far (Markdown cannot be rendered piece by piece: a
// later line can turn earlier ones into a table or close a code fence). That costs more as the
// reply grows, so renders are spaced by ten times what the last one took: rendering never takes
// more than about a tenth of the page's time, however long the reply, and a short reply still
// shows every batch of deltas at once.

import { renderRichText } from "./richtext.js";

const SPACING = 10;

export class LiveMarkdown {
  /** @param onRender called after each render (the timeline follows the growing bubble) */
  constructor(el, onRender = () => {}) {
    this.el = el;
    this.onRender = onRender;
    this.text = "";
    this.timer = null;
    this.lastCost = 0;
    this.lastEnd = 0;
  }

  /** The whole text so far; it is rendered now or soon. */
  set(text) {
    this.text = text;
    if (this.timer !== null) return;
    const wait = Math.max(0, this.lastEnd + this.lastCost * SPACING - performance.now());
    this.timer = setTimeout(() => this.render(), wait);
  }

  /** Render what arrived (a Turn that ends keeps what streamed, fully drawn). */
  render() {
    this.stop();
    const start = performance.now();
    this.el.replaceChildren(renderRichText(this.text));
    this.lastEnd = performance.now();
    this.lastCost = this.lastEnd - start;
    this.onRender();
  }

  stop() {
    clearTimeout(this.timer);
    this.timer = null;
  }
}
