"""Message search's index is filled in batches, not by a trigger per message (docs/DECISIONS.md D80).

The insert trigger of ``0002_message_search`` wrote a new FTS5 segment in every transaction that
held a message, and merged segments every few: ~0.15 ms of the writer thread's ~1.9 per Turn.
``rooms/search_index.py`` now indexes every message past ``indexed_through`` (one row, here) in one
statement, about once a second, and search matches the not-yet-indexed tail as the index would. The delete
and update triggers stay, for an operator's hand edit, but only for rows the index already holds:
FTS5 must never be asked to delete text it was not given.

Every message is indexed at this point (the old trigger did it), so the mark starts at the head.
"""

from django.db import migrations

FTS = "rooms_message_fts"
MARK = "rooms_message_fts_mark"
CONTENT = "json_extract({row}.body, '$.content')"
IS_MESSAGE = "{row}.event_type = 'message.created'"
INDEXED = f"(SELECT indexed_through FROM {MARK})"

OLD_INSERT_TRIGGER = (
    f"CREATE TRIGGER {FTS}_ai AFTER INSERT ON rooms_event WHEN {IS_MESSAGE.format(row='new')} BEGIN "
    f"INSERT INTO {FTS}(rowid, content) VALUES (new.seq, {CONTENT.format(row='new')}); END"
)


def _edit_triggers(indexed_only: bool) -> list[str]:
    """The delete and update triggers of 0002, limited to indexed rows when ``indexed_only``."""
    old_indexed = f" AND old.seq <= {INDEXED}" if indexed_only else ""
    return [
        f"CREATE TRIGGER {FTS}_ad AFTER DELETE ON rooms_event WHEN {IS_MESSAGE.format(row='old')}{old_indexed} "
        f"BEGIN INSERT INTO {FTS}({FTS}, rowid, content) VALUES ('delete', old.seq, {CONTENT.format(row='old')}); "
        "END",
        f"CREATE TRIGGER {FTS}_au AFTER UPDATE OF body, event_type ON rooms_event "
        f"{f'WHEN old.seq <= {INDEXED} ' if indexed_only else ''}BEGIN "
        f"INSERT INTO {FTS}({FTS}, rowid, content) SELECT 'delete', old.seq, {CONTENT.format(row='old')} "
        f"WHERE {IS_MESSAGE.format(row='old')}; "
        f"INSERT INTO {FTS}(rowid, content) SELECT new.seq, {CONTENT.format(row='new')} "
        f"WHERE {IS_MESSAGE.format(row='new')}; END",
    ]


def _drop_triggers(schema_editor, *suffixes: str) -> None:
    for suffix in suffixes:
        schema_editor.execute(f"DROP TRIGGER IF EXISTS {FTS}_{suffix}")


def in_batches(apps, schema_editor):
    if schema_editor.connection.vendor != "sqlite":
        return  # other vendors search with LIKE (groupx_site/store/text_search.py)
    schema_editor.execute(f"CREATE TABLE {MARK} (id INTEGER PRIMARY KEY CHECK (id = 1), "
                          "indexed_through INTEGER NOT NULL)")
    schema_editor.execute(f"INSERT INTO {MARK} (id, indexed_through) "
                          "SELECT 1, COALESCE(MAX(seq), 0) FROM rooms_event")
    _drop_triggers(schema_editor, "ai", "ad", "au")
    for sql in _edit_triggers(indexed_only=True):
        schema_editor.execute(sql)


def by_trigger(apps, schema_editor):
    if schema_editor.connection.vendor != "sqlite":
        return
    _drop_triggers(schema_editor, "ad", "au")
    schema_editor.execute(f"DROP TABLE IF EXISTS {MARK}")
    for sql in [OLD_INSERT_TRIGGER, *_edit_triggers(indexed_only=False)]:
        schema_editor.execute(sql)
    schema_editor.execute(f"INSERT INTO {FTS}({FTS}) VALUES ('rebuild')")  # the tail that was not indexed yet


class Migration(migrations.Migration):
    dependencies = [("rooms", "0003_postgresql_seq")]

    operations = [migrations.RunPython(in_batches, by_trigger)]
