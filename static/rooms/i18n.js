// i18n.js — the page's strings in the reader's language (docs/DECISIONS.md D123).
//
// Django's JavaScript catalog (/jsi18n/, a classic script the page loads before its modules)
// defines gettext(), ngettext() and interpolate() on `django`; the modules import them from here.
// Without the catalog (a page opened from a file, a failed load) every string stays English.
// Agent and user text never goes through these.

const catalog = globalThis.django || {};

export const gettext = catalog.gettext ? catalog.gettext.bind(catalog) : (text) => text;
export const ngettext = catalog.ngettext
  ? catalog.ngettext.bind(catalog) : (singular, plural, count) => (count === 1 ? singular : plural);

/** A translated string with its %(name)s placeholders filled from `values` (the catalog's interpolate). */
export function format(text, values) {
  if (catalog.interpolate) return catalog.interpolate(text, values, true);
  return String(text).replace(/%\(([a-zA-Z_]+)\)s/g, (_, name) => String(values[name]));
}
