// agent_restart.js — the Restart button of an agent card (FEATURES §3, §17; docs/DECISIONS.md D41).
//
// After a confirmation, POST /api/agents/{actorId}/restart. The card then follows the durable
// session.* events (stopped, starting, ready) like any other status change; a refused restart
// shows its code on the card, and trying again reuses the same clientCommandId.

import { postJson } from "./api.js";
import { confirmAction } from "./confirm_dialog.js";
import { newCommandId } from "./dom.js";
import { format, gettext } from "./i18n.js";

const failedIds = new Map(); // actorId → the clientCommandId of a restart that did not go through

export async function restartAgent(sidebar, actorId, name, button) {
  const answer = await confirmAction({
    title: format(gettext("Restart %(name)s?"), { name }),
    paragraphs: [
      format(gettext("GroupX closes %(name)s's CLI and starts a new one at once, on the same session of its own."), { name }),
      gettext("A Turn it is running now is interrupted; what it wrote so far is kept. Queued Turns wait and run on the new CLI."),
    ],
    confirmLabel: gettext("Restart"),
  });
  if (!answer) return;
  const id = failedIds.get(actorId) || newCommandId();
  button.disabled = true;
  button.setAttribute("aria-busy", "true");
  const reply = await postJson(`/api/agents/${encodeURIComponent(actorId)}/restart`, { clientCommandId: id });
  button.disabled = false;
  button.removeAttribute("aria-busy");
  if (reply.ok) {
    failedIds.delete(actorId);
    sidebar.update(actorId, { status: "restarting", retry: null, lastError: null });
  } else {
    failedIds.set(actorId, id);
    sidebar.update(actorId, { lastError: { code: reply.error.code, message: format(gettext("Restart refused: %(reason)s"), { reason: reply.error.message || "" }) } });
  }
}
