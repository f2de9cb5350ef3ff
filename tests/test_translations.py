"""The translation catalogs (groupx_site/locale, docs/DECISIONS.md D123): every string the pages,
their scripts and the server show is in the catalog, translated, not fuzzy, and the committed .mo
says what its .po says (a wheel and a fresh clone use the .mo, with no gettext installed)."""

from __future__ import annotations

import gettext
import re
from pathlib import Path

import polib
import pytest

REPO = Path(__file__).resolve().parent.parent
LOCALE = REPO / "groupx_site" / "locale"
CATALOGS = sorted(LOCALE.glob("*/LC_MESSAGES/*.po"))

# A string literal of the scripts, and the calls that mark one for the catalog.
JS_STRING = r'"((?:[^"\\]|\\.)*)"'
JS_GETTEXT = re.compile(rf"\bgettext\(\s*{JS_STRING}")
JS_NGETTEXT = re.compile(rf"\bngettext\(\s*{JS_STRING},\s*{JS_STRING}")
TEMPLATE_TRANSLATE = re.compile(r"""{%\s*translate\s+(?:"([^"]*)"|'([^']*)')(?:\s+context\s+"([^"]*)")?\s*%}""")


def test_there_is_a_chinese_catalog_for_the_pages_their_scripts_and_the_server():
    assert {path.relative_to(LOCALE).as_posix() for path in CATALOGS} >= {
        "zh_Hans/LC_MESSAGES/django.po",
        "zh_Hans/LC_MESSAGES/djangojs.po",
    }


@pytest.mark.parametrize("po_path", CATALOGS, ids=lambda path: path.relative_to(LOCALE).as_posix())
def test_every_entry_of_a_catalog_is_translated_and_none_is_fuzzy(po_path):
    catalog = polib.pofile(str(po_path))

    assert not catalog.metadata_is_fuzzy, "the header is still marked fuzzy"
    assert [entry.msgid for entry in catalog.untranslated_entries()] == []
    assert [entry.msgid for entry in catalog.fuzzy_entries()] == []
    assert [entry.msgid for entry in catalog.obsolete_entries()] == []


@pytest.mark.parametrize("po_path", CATALOGS, ids=lambda path: path.relative_to(LOCALE).as_posix())
def test_the_committed_mo_says_what_its_po_says(po_path):
    mo_path = po_path.with_suffix(".mo")
    assert mo_path.exists(), f"{mo_path.name} is missing: run `make messages`"
    with mo_path.open("rb") as handle:
        compiled = gettext.GNUTranslations(handle)._catalog  # what Django reads
    expected = {}
    for entry in polib.pofile(str(po_path)).translated_entries():
        key = f"{entry.msgctxt}\x04{entry.msgid}" if entry.msgctxt else entry.msgid
        if entry.msgid_plural:
            expected.update({(key, int(n)): text for n, text in entry.msgstr_plural.items()})
        else:
            expected[key] = entry.msgstr

    actual = {key: text for key, text in compiled.items() if key != ""}  # "" is the header
    assert actual == expected, f"{mo_path.name} is stale: run `make messages`"


def _catalog_ids(domain: str) -> set[tuple[str | None, str]]:
    """(context, msgid) of every entry, a plural's other form included."""
    entries = polib.pofile(str(LOCALE / "zh_Hans/LC_MESSAGES" / f"{domain}.po"))
    return {(entry.msgctxt, text) for entry in entries for text in (entry.msgid, entry.msgid_plural) if text}


def _unescape(literal: str) -> str:
    return literal.encode().decode("unicode_escape").encode("latin-1").decode()


def test_every_string_the_scripts_mark_is_in_the_catalog():
    marked = set()
    for script in (REPO / "static").glob("*/*.js"):
        if script.parent.name == "vendor":
            continue
        text = script.read_text()
        marked |= {_unescape(found) for found in JS_GETTEXT.findall(text)}
        marked |= {_unescape(found) for pair in JS_NGETTEXT.findall(text) for found in pair}
    assert len(marked) > 200  # the room's and /setup's scripts, not a pattern that matched nothing

    missing = sorted(marked - {msgid for _, msgid in _catalog_ids("djangojs")})
    assert missing == [], "run `make messages` and translate them"


def test_every_string_the_templates_translate_is_in_the_catalog():
    marked = set()
    for template in (REPO / "templates").rglob("*.html"):
        for double, single, context in TEMPLATE_TRANSLATE.findall(template.read_text()):
            marked.add((context or None, double or single))
    assert len(marked) > 80

    missing = sorted(marked - _catalog_ids("django"), key=str)
    assert missing == [], "run `make messages` and translate them"
