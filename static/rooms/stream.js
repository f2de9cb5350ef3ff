// stream.js — the room's SSE connection, reopened by us and never by the browser.
//
// The browser's own EventSource retry would resend the original URL (?afterSeq=<old cursor>) plus
// a Last-Event-ID header with a newer seq; the server refuses that disagreement with 400
// (docs/DECISIONS.md D18). So on any error we close the EventSource and open a new one with
// afterSeq = the last durable seq we applied, backing off 250 ms → 10 s with ±20% jitter.

const MIN_DELAY_MS = 250;
const MAX_DELAY_MS = 10_000;
const JITTER = 0.2;

export function backoffDelay(attempt) {
  const base = Math.min(MAX_DELAY_MS, MIN_DELAY_MS * 2 ** attempt);
  return Math.round(base * (1 + (Math.random() * 2 - 1) * JITTER));
}

export class RoomStream {
  /**
   * @param {object} handlers onDurable(env), onTransient(env), onReset(env), onState(state, info);
   *   each env is an Envelope (#/components/schemas/Envelope), the JSON of a frame's data.
   *   state is "connecting" | "live" | "reconnecting".
   */
  constructor({ url = "/api/events", onDurable, onTransient, onReset, onState }) {
    Object.assign(this, { url, onDurable, onTransient, onReset, onState });
    this.source = null;
    this.timer = null;
    this.attempt = 0;
    this.lastSeq = 0;
    this.fresh = true;
  }

  /** Start (or restart) from a cursor, e.g. bootstrap's room.throughSeq. */
  start(afterSeq) {
    this.stop();
    this.lastSeq = afterSeq;
    this.attempt = 0;
    this.open();
  }

  stop() {
    clearTimeout(this.timer);
    this.timer = null;
    if (this.source) this.source.close();
    this.source = null;
  }

  open() {
    this.stop();
    const source = new EventSource(`${this.url}?afterSeq=${encodeURIComponent(this.lastSeq)}`);
    this.source = source;
    // The first durable frame after opening is the server's replay from our cursor, so a jump
    // there is a real hole in the log (not a lost frame) and must not loop us into reconnects.
    this.fresh = true;
    this.onState("connecting");
    source.onopen = () => {
      if (this.source !== source) return;
      this.attempt = 0;
      this.onState("live");
    };
    source.onmessage = (message) => {
      if (this.source === source) this.frame(message.data);
    };
    source.onerror = () => {
      if (this.source === source) this.reconnect();
    };
  }

  reconnect({ immediate = false } = {}) {
    this.stop();
    const delay = immediate ? MIN_DELAY_MS : backoffDelay(this.attempt);
    this.attempt += 1;
    this.onState("reconnecting", { delay });
    this.timer = setTimeout(() => this.open(), delay);
  }

  frame(data) {
    let envelope;
    try {
      envelope = JSON.parse(data);
    } catch {
      return; // not an envelope: ignore rather than tear down a healthy stream
    }
    if (!envelope || typeof envelope.type !== "string") return;
    if (envelope.type === "stream.reset") {
      // Our cursor is beyond the server's head (a reset store): only a new bootstrap is safe.
      this.stop();
      this.onReset(envelope);
      return;
    }
    if (typeof envelope.seq !== "number") {
      this.onTransient(envelope);
      return;
    }
    if (envelope.seq <= this.lastSeq) return; // already applied (a replay overlap)
    if (envelope.seq !== this.lastSeq + 1 && !this.fresh) {
      // A durable frame went missing: read again from the last seq we applied.
      this.reconnect({ immediate: true });
      return;
    }
    this.fresh = false;
    this.lastSeq = envelope.seq;
    this.onDurable(envelope);
  }
}
