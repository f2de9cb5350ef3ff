// dom.js — the one way this page builds elements.
//
// Everything a model or a person wrote reaches the page through text nodes made here; nothing
// is ever assigned to innerHTML, so no message can inject markup or script (FEATURES §17).

import { actorHue } from "./avatars.js";

/**
 * h("div", {class: "x", dataset: {turnId}, "aria-label": "…", onclick}, child, "text", …)
 * Strings become text nodes; null/undefined/false children are skipped.
 */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") el.className = value;
    else if (key === "text") el.textContent = value;
    else if (key === "dataset") Object.assign(el.dataset, value);
    else if (key.startsWith("on") && typeof value === "function") el.addEventListener(key.slice(2), value);
    else if (value === true) el.setAttribute(key, "");
    else el.setAttribute(key, String(value));
  }
  append(el, children);
  return el;
}

export function append(el, children) {
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

/** Replace an element's children. */
export function replaceChildren(el, ...children) {
  el.replaceChildren();
  return append(el, children);
}

/** Unicode code points, the unit the server's 131,072 limit counts (Python len on the server). */
export function codePoints(text) {
  let n = 0;
  for (const _ of text) n += 1; // eslint-disable-line no-unused-vars
  return n;
}

/** A one-line excerpt for reply/forward references. */
export function excerpt(text, limit = 140) {
  const flat = String(text ?? "").replace(/\s+/g, " ").trim();
  const chars = Array.from(flat);
  return chars.length > limit ? chars.slice(0, limit - 1).join("") + "…" : flat;
}

export function clockTime(iso) {
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return "";
  return date.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
}

/** Colour an element for an actor through a CSS custom property (CSSOM, allowed by the CSP). */
export function tintFor(el, actorId) {
  el.style.setProperty("--hue", String(actorHue(actorId)));
  return el;
}

export function newCommandId() {
  if (crypto.randomUUID) return crypto.randomUUID();
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}
