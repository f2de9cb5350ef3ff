// chips.js — one chip per Turn under the message that asked for it: who, and how far it got.

import { h, tintFor } from "./dom.js";
import { format, gettext } from "./i18n.js";
import { CANCELLABLE, TERMINAL } from "./turns.js";

/** Draw (or redraw) ``turn``'s chip in its message's chip row, or in the orphan row below. */
export function renderChip(timeline, turn) {
  let row = timeline.chipRows.get(turn.sourceEventId);
  if (!row) {
    if (TERMINAL.has(turn.status) || turn.fromReply) {
      // A finished Turn whose message is not on the page needs no chip; a Turn we just sent
      // gets its chip when its message arrives (moments later, from the stream).
      const stale = timeline.chips.get(turn.turnId);
      if (stale && stale.parentElement === timeline.orphans) stale.remove();
      timeline.orphans.hidden = !timeline.orphans.childElementCount;
      return;
    }
    row = timeline.orphans;
  }
  let chip = timeline.chips.get(turn.turnId);
  if (!chip) {
    const agent = timeline.ctx.agentActor(turn.target);
    chip = tintFor(h("span", { class: "turn-chip", role: "listitem", dataset: { turnId: turn.turnId, agent: turn.target } },
      h("span", { class: "chip-dot", "aria-hidden": "true" }),
      h("span", { class: "chip-name", text: agent.displayName }),
      h("span", { class: "chip-status" }),
      h("button", { type: "button", class: "chip-cancel",
        "aria-label": format(gettext("Cancel %(name)s's Turn"), { name: agent.displayName }),
        title: gettext("Cancel this Turn"), text: gettext("Cancel"), onclick: () => timeline.ctx.onCancel(turn.turnId) })),
    turn.target);
    timeline.chips.set(turn.turnId, chip);
  }
  if (chip.parentElement !== row) row.append(chip);
  timeline.orphans.hidden = !timeline.orphans.childElementCount;
  chip.dataset.status = turn.status;
  chip.querySelector(".chip-status").textContent = chipLabel(timeline, turn);
  chip.querySelector(".chip-cancel").hidden = !CANCELLABLE.has(turn.status);
  if (turn.cancelError) chip.title = format(gettext("Cancel failed: %(reason)s"), { reason: turn.cancelError });
}

function chipLabel(timeline, turn) {
  switch (turn.status) {
    case "queued": return format(gettext("queued · #%(position)s"), { position: timeline.ctx.turns.queuePosition(turn) });
    case "dispatching": return gettext("starting");
    case "running": return gettext("working");
    case "cancelling": return gettext("cancelling…");
    case "completed": return gettext("replied");
    case "failed": return turn.errorCode ? `${gettext("failed")} · ${turn.errorCode}` : gettext("failed");
    case "cancelled": return gettext("cancelled");
    case "interrupted": return gettext("interrupted");
    default: return turn.status;
  }
}
