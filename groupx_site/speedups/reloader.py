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
"true"), with this reloader in place of ``get_reloader()``'s. The watched files are the ones
Django's list names, each module's file resolved once, when its name is first seen, rather than
all again after any import (D82). The parent process, which restarts the child, is left to
Django. ``tests/unit/test_reloader.py`` pins the sha256 of the Django functions copied or relied
on, so a new Django is read again before it is trusted.
"""

from __future__ import annotations

import logging
import signal
import sys
import weakref
from pathlib import Path
from types import ModuleType
from zipimport import zipimporter

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
        # A module's file name -> (its resolved path, whether it is outside the project); None
        # for a name that cannot be a path. Each name is resolved once, when first seen.
        self._resolved: dict[str, tuple[Path, bool] | None] = {}
        self._module_names: tuple[str, ...] = ()  # sys.modules' keys when the lists were made
        self._every_module: list[Path] = []
        self._project_modules: list[Path] = []

    def watched_files(self, include_globs: bool = True):
        """Django's ``BaseReloader.watched_files``, with the module files outside the project
        left out on all ticks but every ``OUTSIDE_EVERY``-th (``snapshot_files`` calls it once per
        tick), and each module's file resolved once rather than all again after any import."""
        self._ticks += 1
        every_module, project_modules = self._module_files()
        yield from every_module if self._ticks % OUTSIDE_EVERY == 1 else project_modules
        yield from self.extra_files
        if include_globs:
            for directory, patterns in self.directory_globs.items():
                for pattern in patterns:
                    yield from directory.glob(pattern)

    def _module_files(self) -> tuple[list[Path], list[Path]]:
        # Django's iter_all_python_module_files caches its answer until sys.modules changes, then
        # resolves every module's path again (``Path.resolve``, a few system calls each): ~30 ms
        # of the GIL with ~1,200 modules, on the tick after a request first imports something,
        # which held up the replies being served then (the reply p95 of ``bench.compare``, D82).
        names = tuple(sys.modules)
        if names != self._module_names:
            self._module_names = names
            every_module, project_modules = [], []
            for file_name in _module_file_names():
                if file_name not in self._resolved:
                    self._resolved[file_name] = self._resolve(file_name)
                found = self._resolved[file_name]
                if found is not None:
                    every_module.append(found[0])
                    if not found[1]:
                        project_modules.append(found[0])
            self._every_module, self._project_modules = every_module, project_modules
        return self._every_module, self._project_modules

    def _resolve(self, file_name: str) -> tuple[Path, bool] | None:
        try:
            path = Path(file_name).resolve().absolute()
        except ValueError:  # a null byte (network file systems), as Django skips it
            return None
        return path, any(path.is_relative_to(root) for root in self._outside_roots)


def _module_file_names():
    """The file names Django's ``iter_modules_and_files`` watches: each module's origin (the
    archive of a zipped one, ``__file__`` for ``__main__``) and the files that failed to import.
    One that does not exist is skipped by ``snapshot_files``'s stat, as Django's ``exists()`` did."""
    for module in list(sys.modules.values()):
        if isinstance(module, weakref.ProxyTypes) or not isinstance(module, ModuleType):
            continue
        if module.__name__ in ("__main__", "__mp_main__"):
            file_name = getattr(module, "__file__", None)
        else:
            spec = getattr(module, "__spec__", None)
            if spec is None or not spec.has_location:
                continue
            file_name = spec.loader.archive if isinstance(spec.loader, zipimporter) else spec.origin
        if file_name:
            yield file_name
    yield from autoreload._error_files  # Django's list of files that raised on import


def serve(main_func, *args, **kwargs) -> None:
    """Django's ``run_with_reloader`` in the serving child, with ``GroupXStatReloader`` where Django
    would choose its ``StatReloader``."""
    signal.signal(signal.SIGTERM, lambda *args: sys.exit(0))
    try:
        reloader = autoreload.get_reloader()
        if type(reloader) is autoreload.StatReloader:
            reloader = GroupXStatReloader()
        logger.info(
            "Watching for file changes with %s%s",
            reloader.__class__.__name__,
            f" (installed packages every {OUTSIDE_EVERY} s)" if reloader.__class__ is GroupXStatReloader else "",
        )
        autoreload.start_django(reloader, main_func, *args, **kwargs)
    except KeyboardInterrupt:
        pass
