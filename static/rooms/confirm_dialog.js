// confirm_dialog.js — one modal question before an action the page cannot undo (an agent
// restart, a context reset). A native <dialog>: focus stays inside it, Escape cancels, and
// nothing is sent until the person confirms.

import { h } from "./dom.js";
import { gettext } from "./i18n.js";

let open = null;

/**
 * Ask, then resolve to null (cancelled) or {option} (confirmed; option: the checkbox's state).
 * @param {{title: string, paragraphs: Array, confirmLabel: string, option?: {label: string, checked: boolean}}} question
 */
export function confirmAction({ title, paragraphs, confirmLabel, option = null }) {
  if (open) open.close();
  const checkbox = option ? h("input", { type: "checkbox", class: "confirm-check", checked: option.checked }) : null;
  const dialog = h("dialog", { class: "confirm-dialog", "aria-labelledby": "confirm-title" },
    h("form", { method: "dialog" },
      h("h2", { id: "confirm-title", text: title }),
      paragraphs.map((paragraph) => h("p", {}, paragraph)),
      option ? h("label", { class: "confirm-option" }, checkbox, h("span", { text: option.label })) : null,
      h("div", { class: "confirm-actions" },
        h("button", { type: "submit", value: "cancel", class: "btn-ghost", text: gettext("Cancel") }),
        h("button", { type: "submit", value: "confirm", class: "confirm-go", text: confirmLabel }))));
  document.body.append(dialog);
  open = dialog;
  return new Promise((resolve) => {
    dialog.addEventListener("close", () => {
      if (open === dialog) open = null;
      dialog.remove();
      resolve(dialog.returnValue === "confirm" ? { option: checkbox ? checkbox.checked : false } : null);
    }, { once: true });
    dialog.showModal();
  });
}
