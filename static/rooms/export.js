// export.js — the header's menu that downloads the room, or a time range of it, as Markdown
// (GET /api/export.md; the server streams it with Content-Disposition: attachment).
//
// The range inputs are the reader's local time; the link carries them as UTC ISO instants, so the
// file holds exactly what the reader chose whatever the server's zone.

import { gettext } from "./i18n.js";

function instant(value) {
  if (!value) return null;
  const date = new Date(value); // datetime-local: local time
  return Number.isNaN(date.getTime()) ? null : date.toISOString();
}

export class ExportMenu {
  /** @param elements {menu (the <details>), from, to, link, hint} */
  constructor({ menu, from, to, link, hint }) {
    Object.assign(this, { menu, from, to, link, hint });
    for (const input of [from, to]) input.addEventListener("input", () => this.update());
    document.addEventListener("pointerdown", (event) => {
      if (!menu.contains(event.target)) menu.open = false;
    });
    menu.addEventListener("keydown", (event) => {
      if (event.key === "Escape") menu.open = false;
    });
    this.update();
  }

  update() {
    const params = new URLSearchParams();
    const start = instant(this.from.value);
    const end = instant(this.to.value);
    if (start) params.set("from", start);
    if (end) params.set("to", end);
    const backwards = start && end && start >= end;
    this.hint.textContent = backwards ? gettext("“From” must be before “To”.")
      : start || end ? gettext("Messages in this range.") : gettext("The whole room.");
    this.link.toggleAttribute("aria-disabled", Boolean(backwards));
    this.link.href = backwards ? "#" : `/api/export.md${params.size ? `?${params}` : ""}`;
  }
}
