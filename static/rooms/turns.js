// turns.js — what the page knows about each Turn: target, status, source message, queue order.
//
// Durable turn.* events are applied in seq order and are authoritative; bootstrap's activeTurns
// is a snapshot taken together with recentEvents, so it is authoritative too. The POST reply and
// the cancel reply only fill in what the stream has not said yet, and a terminal status is final.

export const TERMINAL = new Set(["completed", "failed", "cancelled", "interrupted"]);
export const CANCELLABLE = new Set(["queued", "dispatching", "running"]);
export const IN_FLIGHT = new Set(["dispatching", "running", "cancelling"]);

const STATUS_BY_TYPE = {
  "turn.queued": "queued",
  "turn.dispatched": "dispatching",
  "turn.started": "running",
  "turn.completed": "completed",
  "turn.failed": "failed",
  "turn.cancelled": "cancelled",
  "turn.interrupted": "interrupted",
};

export function isTurnLifecycle(type) {
  return type in STATUS_BY_TYPE;
}

export class TurnStore {
  constructor(onChange) {
    this.onChange = onChange;
    this.reset();
  }

  reset() {
    this.turns = new Map();
    this.fallbackOrder = -1e9; // turns queued before the bootstrap window sort first
    this.hintOrder = 1e12; // turns we just created sort last until their turn.queued arrives
  }

  get(turnId) {
    return this.turns.get(turnId);
  }

  ensure(turnId, fields) {
    let turn = this.turns.get(turnId);
    if (!turn) {
      turn = { turnId, target: null, sourceEventId: null, status: "queued", order: this.fallbackOrder++, errorCode: null };
      this.turns.set(turnId, turn);
    }
    for (const [key, value] of Object.entries(fields)) {
      if (value !== undefined && value !== null) turn[key] = value;
    }
    return turn;
  }

  /** A durable turn.* event, in seq order. */
  apply(envelope) {
    const body = envelope.body || {};
    const status = STATUS_BY_TYPE[envelope.type];
    if (!status || !body.turnId) return null;
    const known = this.turns.get(body.turnId);
    if (known && TERMINAL.has(known.status)) return known;
    const turn = this.ensure(body.turnId, {
      target: body.targetActorId || (envelope.to && envelope.to[0]),
      sourceEventId: body.sourceEventId,
      errorCode: body.errorCode,
    });
    turn.status = status;
    if (envelope.type === "turn.queued") turn.order = envelope.seq;
    this.onChange(turn);
    return turn;
  }

  /** bootstrap.activeTurns: {turnId, targetActorId, status, sourceEventId}, in enqueue order. */
  applySnapshot(activeTurns) {
    for (const entry of activeTurns || []) {
      const turn = this.ensure(entry.turnId, { target: entry.targetActorId, sourceEventId: entry.sourceEventId });
      turn.status = entry.status;
    }
  }

  /** A hint from a REST reply (POST /api/messages or a cancel): never overrides what is known. */
  hint(turnId, fields) {
    const known = this.turns.get(turnId);
    if (known && TERMINAL.has(known.status)) return known;
    if (known && fields.status && fields.status !== "cancelling") delete fields.status;
    const turn = this.ensure(turnId, fields);
    if (!known) {
      turn.order = this.hintOrder++;
      turn.fromReply = true; // its message is on its way through the stream
    }
    this.onChange(turn);
    return turn;
  }

  forSource(eventId) {
    return [...this.turns.values()].filter((t) => t.sourceEventId === eventId);
  }

  forAgent(actorId) {
    return [...this.turns.values()].filter((t) => t.target === actorId).sort((a, b) => a.order - b.order);
  }

  /** 1 = next in the agent's lane. */
  queuePosition(turn) {
    const queued = this.forAgent(turn.target).filter((t) => t.status === "queued");
    return queued.indexOf(turn) + 1;
  }

  activity(actorId) {
    const mine = this.forAgent(actorId);
    return {
      current: mine.find((t) => IN_FLIGHT.has(t.status)) || null,
      queued: mine.filter((t) => t.status === "queued").length,
    };
  }

  active() {
    return [...this.turns.values()].filter((t) => !TERMINAL.has(t.status)).sort((a, b) => a.order - b.order);
  }
}
