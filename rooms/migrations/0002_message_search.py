"""Full-text search over the room's messages (docs/DECISIONS.md D27).

An external-content FTS5 table over a view of ``message.created`` content, keyed by seq: the text
stays stored once, in the log, and the index holds only trigrams (the same tokenizer as memory,
D15: case-insensitive substrings, Chinese included). The log is append-only, so the insert trigger
is what keeps the index in step; the delete and update triggers are there so that an operator's
hand edit cannot leave the index pointing at text that is gone. ``rebuild`` indexes the messages
written before this migration.
"""

from django.db import migrations

VIEW = "rooms_message_text"
FTS = "rooms_message_fts"
CONTENT = "json_extract({row}.body, '$.content')"
IS_MESSAGE = "{row}.event_type = 'message.created'"

STATEMENTS = [
    f"CREATE VIEW {VIEW} AS SELECT seq, {CONTENT.format(row='rooms_event')} AS content FROM rooms_event "
    f"WHERE {IS_MESSAGE.format(row='rooms_event')}",
    f"CREATE VIRTUAL TABLE {FTS} USING fts5(content, content='{VIEW}', content_rowid='seq', tokenize='trigram')",
    f"CREATE TRIGGER {FTS}_ai AFTER INSERT ON rooms_event WHEN {IS_MESSAGE.format(row='new')} BEGIN "
    f"INSERT INTO {FTS}(rowid, content) VALUES (new.seq, {CONTENT.format(row='new')}); END",
    f"CREATE TRIGGER {FTS}_ad AFTER DELETE ON rooms_event WHEN {IS_MESSAGE.format(row='old')} BEGIN "
    f"INSERT INTO {FTS}({FTS}, rowid, content) VALUES ('delete', old.seq, {CONTENT.format(row='old')}); END",
    f"CREATE TRIGGER {FTS}_au AFTER UPDATE OF body, event_type ON rooms_event BEGIN "
    f"INSERT INTO {FTS}({FTS}, rowid, content) SELECT 'delete', old.seq, {CONTENT.format(row='old')} "
    f"WHERE {IS_MESSAGE.format(row='old')}; "
    f"INSERT INTO {FTS}(rowid, content) SELECT new.seq, {CONTENT.format(row='new')} "
    f"WHERE {IS_MESSAGE.format(row='new')}; END",
    f"INSERT INTO {FTS}({FTS}) VALUES ('rebuild')",
]


def create(apps, schema_editor):
    if schema_editor.connection.vendor != "sqlite":
        return  # other vendors search with LIKE (rooms/history.py)
    for sql in STATEMENTS:
        schema_editor.execute(sql)


def drop(apps, schema_editor):
    if schema_editor.connection.vendor != "sqlite":
        return
    for suffix in ("ai", "ad", "au"):
        schema_editor.execute(f"DROP TRIGGER IF EXISTS {FTS}_{suffix}")
    schema_editor.execute(f"DROP TABLE IF EXISTS {FTS}")
    schema_editor.execute(f"DROP VIEW IF EXISTS {VIEW}")


class Migration(migrations.Migration):
    dependencies = [("rooms", "0001_initial")]

    operations = [migrations.RunPython(create, drop)]
