"""``manage.py runserver``'s autoreloader in the serving child: Django's ``StatReloader``, which
stats the files outside the project only on every tenth tick (D79).

Django's reloader stats every watched file once a second: each module's file (~1,170 here: the
standard library's, the venv's packages', GroupX's) and the template directories' globs. About
nine in ten are the interpreter's and the installed packages', which change when a package is
installed, not while someone edits GroupX. Their stats were ~0.2–0.3 ms of the serving process's
CPU per Turn of the throughput workload (`bench.thread_cpu --entry runserver`, the ``MainThread``
column). Here the project's files and the globs are still looked at every second. The rest are
looked at on the first tick and every ``OUTSIDE_EVERY``-th: a change there restarts the server
within ten seconds instead of one. Watchman, when installed (Django's own efficient reloader),
is used as Django would.

``serve`` is Django's ``run_with_reloader`` for the serving child (``DJANGO_AUTORELOAD_ENV`` is
"true"), with this reloader in place of ``get_reloader()``'s. The watched files are Django's own
list, filtered: the files left out are looked up in a set computed once per module set. The parent process, which restarts
the child, is left to Django. ``tests/unit/test_reloader.py`` pins the sha256 of the Django
functions copied or relied on, so a new Django is read again before it is trusted.
"""

from __future__ import annotations

import logging
import signal
import sys
from pathlib import Path

from django.utils import autoreload

OUTSIDE_EVERY = 10  # ticks of one second: how late a change to an installed package is noticed

logger = logging.getLogger("groupx.runserver")  # shown at INFO, where Django's autoreload logger is not


def _outside_roots() -> tuple[Path, ...]:
    """The interpreter's and the venv's folders (the standard library, site-packages)."""
    prefixes = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    return tuple(sorted({Path(prefix).resolve() for prefix in prefixes}))


class GroupXStatReloader(autoreload.StatReloader):
    def __init__(self) -> None:
        super().__init__()
        self._ticks = 0
        self._outside_roots = _outside_roots()
        self._modules: frozenset[Path] | None = None
        self._outside: frozenset[Path] = frozenset()

    def watched_files(self, include_globs: bool = True):
        """Django's ``watched_files``, less the module files outside the project on all ticks but
        every ``OUTSIDE_EVERY``-th (``snapshot_files`` calls it once per tick)."""
        self._ticks += 1
        files = super().watched_files(include_globs)
        if self._ticks % OUTSIDE_EVERY == 1:
            yield from files
            return
        modules = autoreload.iter_all_python_module_files()  # cached by Django until sys.modules changes
        if modules is not self._modules:
            self._modules = modules
            self._outside = frozenset(f for f in modules if any(f.is_relative_to(r) for r in self._outside_roots))
        yield from (f for f in files if f not in self._outside)


def serve(main_func, *args, **kwargs) -> None:
    """Django's ``run_with_reloader`` in the serving child, with ``GroupXStatReloader`` where Django
    would choose its ``StatReloader``."""
    signal.signal(signal.SIGTERM, lambda *args: sys.exit(0))
    try:
        reloader = autoreload.get_reloader()
        if type(reloader) is autoreload.StatReloader:
            reloader = GroupXStatReloader()
        logger.info("Watching for file changes with %s%s", reloader.__class__.__name__,
                    f" (installed packages every {OUTSIDE_EVERY} s)" if reloader.__class__ is GroupXStatReloader else "")
        autoreload.start_django(reloader, main_func, *args, **kwargs)
    except KeyboardInterrupt:
        pass
