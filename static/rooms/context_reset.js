// context_reset.js — "Reset context" beside the context meter (FEATURES §14, §17; docs/DECISIONS.md D41).
//
// The confirmation says what a reset keeps (the log, every memory) and what agents forget (the
// conversation so far, in their Context Packets). Its checkbox, on by default, also asks every
// agent's CLI to start a fresh native session (resetNativeSessions), so the CLI's own history is
// forgotten too. The outcome is told in the meter's status line.

import { postJson } from "./api.js";
import { confirmAction } from "./confirm_dialog.js";
import { h, newCommandId } from "./dom.js";
import { gettext } from "./i18n.js";

export class ContextReset {
  /** @param button the "Reset context" button; @param meter the ContextMeter (render, say) */
  constructor(button, meter) {
    this.button = button;
    this.meter = meter;
    this.failedId = null; // a retry of a failed reset is the same command
    button.addEventListener("click", () => this.run());
  }

  async run() {
    const answer = await confirmAction({
      title: gettext("Reset the room's context?"),
      paragraphs: [
        [h("strong", { text: gettext("Kept: ") }), gettext("the whole log (scrolling, search and export still show every message) and all memory (public memory, each agent's core and dated memory).")],
        [h("strong", { text: gettext("Forgotten: ") }), gettext("the conversation so far, in what agents are sent from now on: their next Turn starts from here, without the earlier messages or their summary.")],
      ],
      option: { label: gettext("Also start every agent's CLI on a fresh session, so it forgets its own history too (a Turn running now finishes first)."), checked: true },
      confirmLabel: gettext("Reset context"),
    });
    if (!answer) return;
    const id = this.failedId || newCommandId();
    this.button.disabled = true;
    this.button.setAttribute("aria-busy", "true");
    const reply = await postJson("/api/context/reset", { clientCommandId: id, resetNativeSessions: answer.option });
    this.button.disabled = false;
    this.button.removeAttribute("aria-busy");
    if (!reply.ok) {
      this.failedId = id;
      this.meter.say(`${gettext("Reset failed:")} ${reply.error.code}${reply.error.message ? ` — ${reply.error.message}` : ""}`, "err");
      return;
    }
    this.failedId = null;
    if (reply.data.usage) this.meter.render(reply.data.usage);
    if (!reply.data.reset) this.meter.say(gettext("Nothing to reset: no new message since the last reset."));
    else if (reply.data.resetNativeSessions) {
      this.meter.say(gettext("Context reset: agents start from here, each on a fresh CLI session."), "ok");
    } else this.meter.say(gettext("Context reset: agents start from here."), "ok");
  }
}
