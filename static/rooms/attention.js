// attention.js — telling the person about replies while they look elsewhere.
//
// While the tab is hidden the title counts the agents' new replies, "(3) GroupX · room:main", and
// goes back to normal when the tab is seen again. A browser notification says when a Turn finishes
// or fails, only if the person turned it on with the header's bell: the Notification API (even
// its permission) is not touched before that, so the page never asks unprompted.

import { format, gettext } from "./i18n.js";

const STORAGE_KEY = "groupx.notify";
const ENDINGS = { "turn.completed": "finished", "turn.failed": "failed" };

function stored() {
  try {
    return localStorage.getItem(STORAGE_KEY) === "on";
  } catch {
    return false;
  }
}

function store(on) {
  try {
    if (on) localStorage.setItem(STORAGE_KEY, "on");
    else localStorage.removeItem(STORAGE_KEY);
  } catch {
    /* the choice lasts for this page only */
  }
}

export class Attention {
  /**
   * @param toggle the header's notification button (aria-pressed says whether it is on)
   * @param ctx {turnAgent(env) → the display name of the agent a Turn event is about}
   */
  constructor(toggle, ctx) {
    this.toggle = toggle;
    this.ctx = ctx;
    this.title = document.title;
    this.unseen = 0;
    this.enabled = stored() && "Notification" in window && Notification.permission === "granted";
    this.note = ""; // why the bell cannot be turned on, when it cannot
    document.addEventListener("visibilitychange", () => {
      if (!document.hidden) this.seen();
    });
    toggle.addEventListener("click", () => this.flip());
    this.paintToggle();
  }

  /** A durable event that arrived live on the stream (history read at bootstrap is not news). */
  event(env) {
    if (env.type === "message.created" && env.actor.kind === "agent" && document.hidden) {
      this.unseen += 1;
      document.title = `(${this.unseen}) ${this.title}`;
    }
    if (env.type in ENDINGS) this.notify(env);
  }

  seen() {
    this.unseen = 0;
    document.title = this.title;
  }

  notify(env) {
    if (!this.enabled || (!document.hidden && document.hasFocus())) return; // they can see it already
    const body = env.body || {};
    const who = this.ctx.turnAgent(env);
    const failed = env.type === "turn.failed";
    const note = new Notification(format(failed ? gettext("%(name)s's Turn failed") : gettext("%(name)s finished"), { name: who }), {
      body: failed && body.errorCode ? body.errorCode : this.title,
      tag: body.turnId, // one notification per Turn, even if the event is read twice
    });
    note.addEventListener("click", () => {
      window.focus();
      note.close();
    });
  }

  async flip() {
    if (this.enabled) {
      this.enabled = false;
      store(false);
    } else if (!("Notification" in window)) {
      this.note = gettext("This browser cannot show notifications");
    } else {
      const permission = Notification.permission === "default"
        ? await Notification.requestPermission() : Notification.permission;
      this.enabled = permission === "granted";
      store(this.enabled);
      this.note = permission === "denied" ? gettext("Notifications are blocked for this page in the browser's settings") : "";
    }
    this.paintToggle();
  }

  paintToggle() {
    const label = this.enabled ? gettext("Stop notifications when a Turn ends") : gettext("Notify me when a Turn ends");
    this.toggle.setAttribute("aria-pressed", String(this.enabled));
    this.toggle.setAttribute("aria-label", label);
    this.toggle.title = this.note || label;
  }
}
