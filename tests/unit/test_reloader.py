"""``manage.py runserver``'s autoreloader (groupx_site/speedups/reloader.py, D79): the project's
files are looked at every tick, the interpreter's and the installed packages' on the first and
every tenth. That the serving child really restarts when a project file changes is tested end to
end in tests/test_first_run.py."""

from __future__ import annotations

import hashlib
import importlib
import inspect
import json
import sys
from pathlib import Path

import django.utils.autoreload
from django.core.management.commands import runserver
from django.utils import autoreload

import rooms.events
from groupx_site.speedups.reloader import OUTSIDE_EVERY, GroupXStatReloader

# sha256 of the Django 5.2 code the reloader copies (``run_with_reloader``) or relies on (the
# watched files it filters, how a reloader is chosen and ticks, and where Django's runserver calls it). When this
# fails, compare groupx_site/speedups/reloader.py with the changed code, carry the change over and
# update the hash.
DJANGO_RELOADER_CODE_SHA256 = {
    autoreload.run_with_reloader: "cd89ac52cc3469f19f2d1cb95e3bb0c7f7c168dcba9aa8ba1c06a2495583d9fc",
    autoreload.get_reloader: "f0e783c42456bcae97859d172332596c5241e98d2e07f6b0dc5c5c171e740592",
    autoreload.BaseReloader.watched_files: "146d884bd980421cbbc2c067ae79d8645d7f54f71822564494844442e415ce99",
    # Which module files Django watches (and its ``_error_files``), which the reloader lists itself.
    autoreload.iter_all_python_module_files: "edce24ab79426f7f4cc444ab56382b211045a5b16ff6e0a39e9402c173ff0ecd",
    autoreload.iter_modules_and_files: "8f83de11de7bd0a2de834055acba5418c8491d4c95a1c30edc41d3d8586d392b",
    autoreload.StatReloader.snapshot_files: "723ed57e1a03d2292a47675043d12d170302db3d9d6d8e93d746dc0a78ee6f03",
    autoreload.StatReloader.tick: "40a1d732a4765537d2e24e44983ca5a87b6bc9f20d0a2d1d1efa3beca697438e",
    runserver.Command.run: "2a4489bf5bd31dad6479e1406fcf3b6e7838548c23f7abd5895e5007ebe2260d",
}


def test_the_django_reloader_code_it_relies_on_is_the_code_it_was_written_against():
    changed = [
        function.__qualname__
        for function, digest in DJANGO_RELOADER_CODE_SHA256.items()
        if hashlib.sha256(inspect.getsource(function).encode()).hexdigest() != digest
    ]
    assert changed == [], f'Django changed {changed}: see docs/UPGRADING.md "Django autoreloader"'


def test_project_files_are_watched_every_tick_and_installed_ones_every_tenth():
    project_file = Path(rooms.events.__file__).resolve()
    standard_library_file = Path(json.__file__).resolve()
    installed_file = Path(django.utils.autoreload.__file__).resolve()
    reloader = GroupXStatReloader()

    ticks = [set(reloader.watched_files()) for _ in range(2 * OUTSIDE_EVERY + 1)]

    assert all(project_file in files for files in ticks)
    every_file = [n for n, files in enumerate(ticks, 1) if {standard_library_file, installed_file} <= files]
    assert every_file == [1, OUTSIDE_EVERY + 1, 2 * OUTSIDE_EVERY + 1]
    assert len(ticks[1]) < len(ticks[0]) / 2  # most watched files are the interpreter's and the packages'


def test_a_change_to_an_installed_file_is_still_noticed_on_the_next_tick_that_looks_at_it(tmp_path):
    reloader = GroupXStatReloader()
    reloader.SLEEP_TIME = 0
    changed = []
    reloader.notify_file_changed = changed.append
    installed_file = Path(django.utils.autoreload.__file__).resolve()
    real_snapshot = reloader.snapshot_files

    def snapshot_with_a_newer_installed_file():
        # After the first tick, the installed file reports a later mtime (nothing on disk is touched).
        for path, mtime in real_snapshot():
            yield path, mtime + (1 if path == installed_file and reloader._ticks > 1 else 0)

    reloader.snapshot_files = snapshot_with_a_newer_installed_file
    ticker = reloader.tick()
    for _ in range(OUTSIDE_EVERY):
        next(ticker)
    assert changed == []
    next(ticker)  # the tick that looks at every file again
    assert changed == [installed_file]


def test_every_tick_that_looks_at_everything_watches_the_module_files_django_would():
    reloader = GroupXStatReloader()
    first_tick = {path for path in reloader.watched_files(include_globs=False) if path.exists()}
    assert set(autoreload.iter_all_python_module_files()) <= first_tick
    assert first_tick - set(autoreload.iter_all_python_module_files()) <= set(reloader.extra_files)


def test_a_module_imported_between_ticks_is_watched_and_only_its_file_is_resolved(tmp_path, monkeypatch):
    reloader = GroupXStatReloader()
    set(reloader.watched_files())
    resolved = []
    real_resolve = reloader._resolve
    monkeypatch.setattr(reloader, "_resolve", lambda name: resolved.append(name) or real_resolve(name))
    (tmp_path / "imported_between_ticks.py").write_text("VALUE = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "imported_between_ticks", raising=False)
    importlib.import_module("imported_between_ticks")

    second_tick = set(reloader.watched_files())

    assert (tmp_path / "imported_between_ticks.py").resolve() in second_tick  # a project-side file
    assert resolved == [str(tmp_path / "imported_between_ticks.py")]
