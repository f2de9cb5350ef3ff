// context_meter.js — how full the room's shared context is, and a button to compact it (FEATURES §14, §17).
//
// The numbers are characters, not tokens: GroupX estimates what a Context Packet would carry from
// the transcript (GET /api/context) and says so on screen, because no model's tokenizer is
// involved. Usage is read again, debounced, after anything that changes it (a message, a memory
// write, a compaction or reset). Compaction progress comes from the transient
// context.compaction.* events, which also report automatic compactions a Turn triggered.

import { getJson, postJson } from "./api.js";
import { newCommandId } from "./dom.js";
import { format, gettext } from "./i18n.js";

const REFRESH_DEBOUNCE_MS = 400;
const number = (n) => Number(n || 0).toLocaleString("en-US");

export class ContextMeter {
  /** @param el {root, text, bar, fill, percent, compact, status} */
  constructor(el) {
    Object.assign(this, el);
    this.usage = null;
    this.timer = null;
    this.generation = 0;
    this.compacting = false;
    this.failedId = null; // a retry after a failed compaction reuses its clientCommandId
    this.compact.addEventListener("click", () => this.runCompaction());
  }

  /** Read usage soon; a burst of events becomes one request. */
  schedule() {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.refresh(), REFRESH_DEBOUNCE_MS);
  }

  async refresh() {
    clearTimeout(this.timer);
    const generation = ++this.generation;
    try {
      const usage = /** @type {ContextUsage} */ (await getJson("/api/context"));
      if (generation === this.generation) this.render(usage);
    } catch {
      /* the connection pill reports outages; keep the last numbers */
    }
  }

  render(usage) {
    this.usage = usage;
    const percent = Math.max(0, Math.min(100, Number(usage.utilizationPercent) || 0));
    const trigger = usage.maxCharacters ? Math.round((100 * usage.compactionTriggerCharacters) / usage.maxCharacters) : 75;
    this.root.hidden = false;
    this.text.textContent = format(gettext("%(used)s chars of %(max)s (not tokens)"),
      { used: number(usage.estimatedCharacters), max: number(usage.maxCharacters) });
    this.root.title = format(gettext("%(count)s messages not yet in the summary; GroupX compacts on its own past %(trigger)s chars"),
      { count: number(usage.uncompactedMessageCount), trigger: number(usage.compactionTriggerCharacters) });
    this.percent.textContent = `${percent}%`;
    this.bar.setAttribute("aria-valuenow", String(percent));
    this.bar.setAttribute("aria-valuetext", format(gettext("%(percent)s of the room context used"), { percent: `${percent}%` })
);
    // CSSOM, not a style attribute: the page's CSP allows no inline styles.
    this.fill.style.setProperty("--fill", `${percent}%`);
    this.root.dataset.level = percent >= trigger ? "high" : percent >= trigger * 0.66 ? "mid" : "low";
    this.compact.disabled = this.compacting || !usage.compactable;
    this.compact.title = usage.compactable
      ? gettext("Summarise all but the last 12 messages (the transcript is kept)")
      : gettext("Nothing to compact: 12 or fewer messages since the last summary");
  }

  say(text, tone = "info") {
    this.status.textContent = text;
    this.status.dataset.tone = tone;
    this.status.hidden = !text;
  }

  async runCompaction() {
    if (this.compacting) return;
    this.compacting = true;
    this.compact.disabled = true;
    this.compact.setAttribute("aria-busy", "true");
    const before = this.usage ? this.usage.estimatedCharacters : null;
    const id = this.failedId || newCommandId();
    this.say(gettext("Compacting the conversation…"));
    // CompactBody → CompactResult (api.js)
    const reply = await postJson("/api/context/compact", /** @type {CompactBody} */ ({ clientCommandId: id }));
    this.compacting = false;
    this.compact.removeAttribute("aria-busy");
    if (reply.ok) {
      this.failedId = null;
      const usage = reply.data.usage;
      if (usage) this.render(usage);
      if (!reply.data.compacted) this.say(gettext("Nothing to compact: the last 12 messages are always kept as they are."));
      else if (usage && before !== null) {
        this.say(format(gettext("Compacted: %(before)s → %(after)s chars."),
          { before: number(before), after: number(usage.estimatedCharacters) }), "ok");
      } else this.say(gettext("Compacted."), "ok");
    } else {
      // Keep the id: the same click again is a retry of this command, not a new one.
      this.failedId = id;
      this.say(`${gettext("Compaction failed:")} ${reply.error.code}${reply.error.message ? ` — ${reply.error.message}` : ""}`, "err");
      this.refresh();
    }
  }

  /** Transient context.compaction.started|retrying|completed|failed. */
  progress(env) {
    const body = env.body || {};
    const what = body.operation === "manual" ? gettext("Compacting") : gettext("Compacting automatically");
    const count = number(body.messageCount || 0);
    if (env.type === "context.compaction.started") {
      this.say(body.messageCount ? format(gettext("%(what)s %(count)s messages…"), { what, count }) : `${what}…`);
    } else if (env.type === "context.compaction.retrying") {
      this.say(format(gettext("%(what)s: retrying (attempt %(attempt)s of %(max)s, %(code)s)…"),
        { what, attempt: body.attempt, max: body.maxAttempts, code: body.errorCode || "error" }), "warn");
    } else if (env.type === "context.compaction.failed") {
      if (!this.compacting) this.say(`${gettext("Compaction failed:")} ${body.errorCode || "error"}`, "err");
      this.schedule();
    } else if (env.type === "context.compaction.completed") {
      if (!this.compacting) {
        this.say(body.messageCount ? format(gettext("Compacted %(count)s messages into the summary."), { count })
          : gettext("Compacted into the summary."), "ok");
      }
      this.schedule();
    }
  }
}
