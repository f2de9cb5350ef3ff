// richtext.js — a message body as Markdown: parsed by marked, sanitised by DOMPurify (D28).
//
// Everything a person or a model wrote is untrusted, so the HTML marked writes is never trusted
// either: DOMPurify keeps a short allowlist of tags, no style (the CSP refuses inline style and
// would report it), no images, and links only to http(s) and mailto. The result reaches the page
// as inert nodes in a fresh element, never through innerHTML on the page itself. Raw HTML in a
// message is shown as the text it is: agents quote HTML far more often than they mean it.

import DOMPurify from "../vendor/dompurify/purify.es.js";
import { Marked } from "../vendor/marked/marked.esm.js";
import { codeHtml, decorateCodeBlocks, fenceLanguage } from "./code_blocks.js";
import { h } from "./dom.js";

const ENTITIES = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };
const escapeHtml = (text) => String(text ?? "").replace(/[&<>"']/g, (c) => ENTITIES[c]);

const markdown = new Marked({
  gfm: true, // tables, strikethrough, task lists and bare URLs, as agents write them
  breaks: true, // a line break typed with Shift+Enter stays a line break
  renderer: {
    html({ text, block }) {
      const shown = escapeHtml(String(text).replace(/\n+$/, ""));
      return block ? `<p class="raw-html">${shown}</p>\n` : shown;
    },
    // An image is never loaded: a remote one breaks the CSP (img-src 'self' data:) and would tell
    // its host who read the message. Its alt text becomes a link the reader can choose to open.
    image({ href, text }) {
      return `<a class="md-image" href="${escapeHtml(href)}">${escapeHtml(text || href)}</a>`;
    },
    code({ text, lang }) {
      const language = fenceLanguage(lang);
      // marked keeps the newline before the closing fence; copied code should not carry it.
      const html = codeHtml(String(text).replace(/\n$/, ""), language, escapeHtml);
      return `<pre><code${language ? ` class="language-${language}"` : ""}>${html}</code></pre>\n`;
    },
    // A task list item gets a box drawn in text, not a form control.
    checkbox({ checked }) {
      return checked ? '<span class="md-task is-checked">☑</span> ' : '<span class="md-task">☐</span> ';
    },
  },
});

const SAFE = {
  ALLOWED_TAGS: [
    "a", "blockquote", "br", "code", "del", "em", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "li", "ol", "p",
    "pre", "span", "strong", "table", "tbody", "td", "th", "thead", "tr", "ul",
  ],
  ALLOWED_ATTR: ["href", "title", "class", "start", "align"],
  ALLOWED_URI_REGEXP: /^(?:https?:|mailto:)/i, // anything else (javascript:, data:, relative) loses its href
  // DOMPurify holds every attribute outside its "URI-safe" list (class and title are on it) to
  // that URL pattern; a table cell's align="right" and a list's start="3" are plain words.
  ADD_URI_SAFE_ATTR: ["align", "start"],
  ALLOW_DATA_ATTR: false,
  RETURN_DOM_FRAGMENT: true,
};

// An instance of our own, so this setting and these hooks touch no other user of DOMPurify. The
// setting is made once: passing it to every sanitize() call re-parses it each time, which cost
// more than the sanitising itself.
const purify = DOMPurify(window);
purify.setConfig(SAFE);
purify.addHook("afterSanitizeAttributes", (node) => {
  if (node.tagName !== "A") return;
  if (node.hasAttribute("href")) {
    // A new tab that cannot reach back into this page, and tells the site nothing about it.
    node.setAttribute("target", "_blank");
    node.setAttribute("rel", "noopener noreferrer");
  } else {
    node.classList.add("md-dead-link"); // its URL was refused; the words stay
  }
});

/** A <div class="md"> holding the rendered body of a message. */
export function renderRichText(text) {
  const container = h("div", { class: "md" });
  const source = String(text ?? "");
  if (!source.trim()) return container;
  try {
    container.append(purify.sanitize(markdown.parse(source)));
    decorateCodeBlocks(container);
  } catch (error) {
    // A parser bug must cost one message its formatting, not the whole timeline its rendering.
    console.warn("Markdown rendering failed; showing the text as it is", error);
    container.replaceChildren(source);
    container.classList.add("md--plain");
  }
  return container;
}
