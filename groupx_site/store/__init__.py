"""The storage engine: where database work runs (the writer thread and the readers), read snapshots,
the PostgreSQL settings, store faults, the database file's integrity, the health write probe, text
search, and the channel layer's outbox, through which a committed write wakes the other loops and
processes (its sends leave from the writer thread's ``on_commit``).

It stands on the vocabulary (``groupx_site/core``) and imports no app and nothing else of groupx_site
(docs/ARCHITECTURE.md "Layers").
"""
