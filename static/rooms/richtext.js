// richtext.js — the "rich-text helper" of FEATURES §17: a little formatting, zero HTML parsing.
//
// Code fences become <pre><code>, `inline code` becomes <code>, and http(s) URLs become links;
// every piece of text is a text node, and a link's href is only ever an http(s) URL we matched.

import { h } from "./dom.js";

const URL_RE = /\bhttps?:\/\/[^\s<>"'`]+/g;
const INLINE_CODE_RE = /`([^`\n]+)`/g;
const TRAILING_PUNCTUATION = /[.,;:!?'"]+$/;

/** Split text into [{code: bool, lang, text}] on lines that open or close a ``` fence. */
export function splitFences(text) {
  const parts = [];
  let current = { code: false, lang: "", lines: [] };
  for (const line of String(text).split("\n")) {
    const fence = line.match(/^\s*```\s*([\w+#.-]*)\s*$/);
    if (fence) {
      if (current.lines.length || current.code) parts.push(current);
      current = current.code ? { code: false, lang: "", lines: [] } : { code: true, lang: fence[1], lines: [] };
      continue;
    }
    current.lines.push(line);
  }
  if (current.lines.length || current.code) parts.push(current); // an unclosed fence runs to the end
  return parts.map((p) => ({ code: p.code, lang: p.lang, text: p.lines.join("\n") }));
}

function trimUrl(raw) {
  let url = raw.replace(TRAILING_PUNCTUATION, "");
  // A closing parenthesis belongs to the URL only if the URL opened one, as in Wikipedia links.
  while (url.endsWith(")") && (url.match(/\(/g) || []).length < (url.match(/\)/g) || []).length) {
    url = url.slice(0, -1);
  }
  return url;
}

function linkify(text) {
  const nodes = [];
  let last = 0;
  for (const match of text.matchAll(URL_RE)) {
    const url = trimUrl(match[0]);
    if (match.index > last) nodes.push(text.slice(last, match.index));
    nodes.push(h("a", { href: url, rel: "noopener noreferrer", target: "_blank", text: url }));
    last = match.index + url.length;
  }
  if (last < text.length) nodes.push(text.slice(last));
  return nodes;
}

function inline(text) {
  const nodes = [];
  let last = 0;
  for (const match of text.matchAll(INLINE_CODE_RE)) {
    if (match.index > last) nodes.push(...linkify(text.slice(last, match.index)));
    nodes.push(h("code", { class: "inline-code", text: match[1] }));
    last = match.index + match[0].length;
  }
  if (last < text.length) nodes.push(...linkify(text.slice(last)));
  return nodes;
}

/** A DocumentFragment for a message body. */
export function renderRichText(text) {
  const fragment = document.createDocumentFragment();
  for (const part of splitFences(text)) {
    if (part.code) {
      fragment.append(h("pre", { class: "code-block", "data-lang": part.lang || null },
        h("code", { text: part.text })));
    } else if (part.text.trim()) {
      // Trim only the blank lines a fence leaves behind; inner whitespace is the author's.
      fragment.append(h("div", { class: "text-block" }, ...inline(part.text.replace(/^\n+|\n+$/g, ""))));
    }
  }
  return fragment;
}
