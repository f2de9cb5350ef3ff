// code_blocks.js — the code blocks of a rendered message: highlighted, with a copy button.
//
// A block is highlighted only when its fence names a language highlight.js knows: guessing the
// language runs every grammar over the text, costly for a long log pasted by an agent, and often
// wrong. Highlighting returns HTML (spans with classes around escaped text); it goes through
// DOMPurify too, so nothing but those spans can reach the page.

import DOMPurify from "../vendor/dompurify/purify.es.js";
import hljs from "../vendor/highlight/highlight.min.js";
import { h } from "./dom.js";

const HIGHLIGHT_LIMIT = 50_000; // characters; a longer block stays plain, so the page stays quick
const SPANS_ONLY = { ALLOWED_TAGS: ["span"], ALLOWED_ATTR: ["class"], RETURN_DOM_FRAGMENT: true };
const purify = DOMPurify(window);

function languageOf(code) {
  const match = /(?:^|\s)language-([\w+#.-]+)/.exec(code.className);
  return match ? match[1] : "";
}

function highlight(code, language) {
  const text = code.textContent;
  if (!language || !hljs.getLanguage(language) || text.length > HIGHLIGHT_LIMIT) return;
  const { value } = hljs.highlight(text, { language, ignoreIllegals: true });
  code.replaceChildren(purify.sanitize(value, SPANS_ONLY));
  code.classList.add("hljs");
}

/** Copy the code; where the clipboard is refused, select it so Ctrl+C still works. */
async function copy(code, button) {
  try {
    await navigator.clipboard.writeText(code.textContent);
    button.dataset.state = "copied";
    button.textContent = "Copied";
  } catch {
    getSelection().selectAllChildren(code);
    button.dataset.state = "failed";
    button.textContent = "Press Ctrl+C";
  }
}

function copyButton(code) {
  const button = h("button", { type: "button", class: "copy-code", "aria-label": "Copy the code", text: "Copy" });
  button.addEventListener("click", () => copy(code, button));
  // The "Copied" state lasts until the reader moves on (no timer: it reads the same for everyone).
  button.addEventListener("blur", () => {
    delete button.dataset.state;
    button.textContent = "Copy";
  });
  return button;
}

/** Wrap every <pre><code> in `root` as a titled block with a copy button, highlighted if it can be. */
export function decorateCodeBlocks(root) {
  for (const pre of root.querySelectorAll("pre")) {
    const code = pre.querySelector("code");
    if (!code) continue;
    // marked ends a block's text with the fence's newline; copied code should not carry it.
    if (code.textContent.endsWith("\n")) code.textContent = code.textContent.slice(0, -1);
    const language = languageOf(code);
    highlight(code, language);
    const block = h("div", { class: "code-block", dataset: language ? { lang: language } : {} },
      h("div", { class: "code-head" }, h("span", { class: "code-lang", text: language }), copyButton(code)));
    pre.replaceWith(block);
    block.append(pre);
  }
}
