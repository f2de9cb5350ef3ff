// code_blocks.js — code in a message: highlighted, and given a title bar with a copy button.
//
// A block is highlighted only when its fence names a language highlight.js knows: guessing the
// language runs every grammar over the text, costly for a long log pasted by an agent, and often
// wrong. Highlighting writes HTML (spans with classes around escaped text) into marked's output,
// before DOMPurify sanitises the whole message once (richtext.js).

import hljs from "../vendor/highlight/highlight.min.js";
import { h } from "./dom.js";
import { gettext } from "./i18n.js";

const HIGHLIGHT_LIMIT = 50_000; // characters; a longer block stays plain, so the page stays quick
const LANGUAGE = /^[\w+#.-]+$/;

/** The inside of <code> for a fenced block, as HTML: highlighted spans, or the escaped text. */
export function codeHtml(text, language, escapeHtml) {
  if (language && hljs.getLanguage(language) && text.length <= HIGHLIGHT_LIMIT) {
    return hljs.highlight(text, { language, ignoreIllegals: true }).value;
  }
  return escapeHtml(text);
}

/** The language named by a fence's info string ("python", "js title=x" → "js"), or "". */
export function fenceLanguage(info) {
  const word = String(info || "").trim().split(/\s+/)[0];
  return LANGUAGE.test(word) ? word : "";
}

/** Copy the code; where the clipboard is refused, select it so Ctrl+C still works. */
async function copy(code, button) {
  try {
    await navigator.clipboard.writeText(code.textContent);
    button.dataset.state = "copied";
    button.textContent = gettext("Copied");
  } catch {
    getSelection().selectAllChildren(code);
    button.dataset.state = "failed";
    button.textContent = gettext("Press Ctrl+C");
  }
}

function copyButton(code) {
  const button = h("button", { type: "button", class: "copy-code", "aria-label": gettext("Copy the code"), text: gettext("Copy") });
  button.addEventListener("click", () => copy(code, button));
  // The "Copied" state lasts until the reader moves on (no timer: it reads the same for everyone).
  button.addEventListener("blur", () => {
    delete button.dataset.state;
    button.textContent = gettext("Copy");
  });
  return button;
}

/** Give every <pre><code> in `root` a title bar: its language and a copy button. */
export function decorateCodeBlocks(root) {
  for (const pre of root.querySelectorAll("pre")) {
    const code = pre.querySelector("code");
    if (!code) continue;
    const match = /(?:^|\s)language-([\w+#.-]+)/.exec(code.className);
    const language = match ? match[1] : "";
    const block = h("div", { class: "code-block", dataset: language ? { lang: language } : {} },
      h("div", { class: "code-head" }, h("span", { class: "code-lang", text: language }), copyButton(code)));
    pre.replaceWith(block);
    block.append(pre);
  }
}
