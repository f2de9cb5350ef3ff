// avatars.js — initials and colours that tell the room's agents apart.
//
// Display names in one room often share a word: the five demo agents are "Demo Kimi", "Demo
// Hermes", … and all showed "DE". Initials therefore come from the words that differ, and a clash
// left over is settled by the next letters of the name. Colours start from an agent's usual hue
// (Kimi is violet wherever it runs) and move just enough that no two agents in the room look alike.
// Both are worked out for the whole roster in its own order (the config's, as the sidebar lists
// it): the agent listed first keeps its natural initials, and every page shows the same result.

const KNOWN_HUES = { codex: 160, claude: 22, kimi: 275, hermes: 205, grok: 335, web: 220 };
const WIDEST_GAP = 36; // degrees of hue kept between two agents, when the roster leaves room for it

const roster = new Map(); // actorId → {initials, hue}

function words(name) {
  return String(name || "").split(/[^\p{L}\p{N}]+/u).filter(Boolean);
}

function letters(text) {
  return Array.from(text.toUpperCase());
}

/** Two letters for a name on its own: the first two letters of one word, or two words' first. */
function plainInitials(nameWords) {
  if (nameWords.length > 1) return letters(nameWords[0])[0] + letters(nameWords[1])[0];
  return letters(nameWords[0] || "?").slice(0, 2).join("");
}

/** Initials to try, best first: the plain ones, then the first letter with each later letter. */
function* initialsFor(nameWords) {
  yield plainInitials(nameWords);
  const all = letters(nameWords.join(""));
  for (const next of all.slice(1)) yield all[0] + next;
  for (let n = 2; n < 100; n += 1) yield `${all[0] || "?"}${n}`;
}

/** The hue an actor has outside any roster: its known colour, else a hash of its id. */
function usualHue(actorId) {
  const parts = String(actorId || "").toLowerCase().split(/[^a-z0-9]+/);
  const known = parts.reverse().find((part) => part in KNOWN_HUES);
  if (known) return KNOWN_HUES[known];
  let hash = 0;
  for (const ch of String(actorId || "").split(":").pop()) hash = (hash * 31 + ch.codePointAt(0)) >>> 0;
  return hash % 360;
}

const distance = (a, b) => Math.min(Math.abs(a - b), 360 - Math.abs(a - b));
const nearest = (hue, taken) => Math.min(360, ...taken.map((other) => distance(hue, other)));

/** The hue closest to `wanted` that keeps `gap` from every taken hue; else the freest one. */
function spreadHue(wanted, taken, gap) {
  for (let step = 0; step <= 180; step += 1) {
    for (const hue of [(wanted + step) % 360, (wanted - step + 360) % 360]) {
      if (nearest(hue, taken) >= gap) return hue;
    }
  }
  let best = wanted;
  for (let hue = 0; hue < 360; hue += 1) if (nearest(hue, taken) > nearest(best, taken)) best = hue;
  return best;
}

/** Work out every agent's initials and colour: cards of {actorId, displayName}, in roster order. */
export function setRoster(cards) {
  roster.clear();
  const agents = cards.filter((card, i) => cards.findIndex((other) => other.actorId === card.actorId) === i);
  const names = agents.map((card) => words(card.displayName || String(card.actorId).replace(/^agent:/, "")));
  // Words every agent's name has ("Demo") tell nobody apart.
  const shared = new Set(names.length > 1
    ? names[0].map((w) => w.toLowerCase()).filter((w) => names.every((n) => n.some((x) => x.toLowerCase() === w)))
    : []);
  const usedInitials = new Set();
  const hues = [];
  const gap = Math.min(WIDEST_GAP, 360 / Math.max(agents.length, 1));
  agents.forEach((card, i) => {
    const own = names[i].filter((w) => !shared.has(w.toLowerCase()));
    const candidates = [...initialsFor(own.length ? own : names[i])];
    const initials = candidates.find((c) => !usedInitials.has(c)) || candidates[0];
    usedInitials.add(initials);
    const hue = spreadHue(usualHue(card.actorId), hues, gap);
    hues.push(hue);
    roster.set(card.actorId, { initials, hue });
  });
}

/** The avatar letters of an actor: its roster initials, or plain ones (the person, a system). */
export function avatarInitials(actorId, displayName) {
  const known = roster.get(actorId);
  return known ? known.initials : plainInitials(words(displayName));
}

/** A stable hue per actor, distinct among the roster's agents, so each keeps its colour. */
export function actorHue(actorId) {
  const known = roster.get(actorId);
  return known ? known.hue : usualHue(actorId);
}
