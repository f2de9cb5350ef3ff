"""The interpreter `make` builds .venv from (tools/venv_python.sh, D77): the first ``python3.11``
or ``python3`` on PATH whose interpreter core is linked into its executable, else plain
``python3``. Stand-in interpreters on a PATH of the test's own say yes or no to the script's check;
the check itself runs once on this test's real interpreter."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "tools" / "venv_python.sh"


def _stand_in(folder: Path, name: str, *, qualifies: bool) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(f"#!/bin/sh\nexit {0 if qualifies else 1}\n")
    path.chmod(0o755)
    return path


def _chosen(*folders: Path) -> str:
    path = ":".join(str(folder) for folder in folders)
    done = subprocess.run(["/bin/sh", str(SCRIPT)], env={"PATH": path}, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def test_the_first_qualifying_interpreter_in_path_order_is_chosen(tmp_path):
    _stand_in(tmp_path / "a", "python3", qualifies=False)
    wanted = _stand_in(tmp_path / "b", "python3", qualifies=True)
    _stand_in(tmp_path / "c", "python3.11", qualifies=True)
    assert _chosen(tmp_path / "a", tmp_path / "b", tmp_path / "c") == str(wanted)


def test_python3_11_is_preferred_to_python3_in_the_same_folder(tmp_path):
    _stand_in(tmp_path / "a", "python3", qualifies=True)
    wanted = _stand_in(tmp_path / "a", "python3.11", qualifies=True)
    assert _chosen(tmp_path / "a") == str(wanted)


def test_plain_python3_is_printed_when_nothing_on_path_qualifies(tmp_path):
    _stand_in(tmp_path / "a", "python3", qualifies=False)
    _stand_in(tmp_path / "a", "python3.11", qualifies=False)
    assert _chosen(tmp_path / "a", tmp_path / "empty") == "python3"


def test_the_check_answers_whether_a_real_interpreter_loads_a_shared_libpython(tmp_path):
    folder = tmp_path / "real"
    folder.mkdir()
    (folder / "python3").symlink_to(sys.executable)
    with open("/proc/self/maps") as maps:
        shared_core = any("libpython" in line for line in maps)
    expected = "python3" if shared_core else str(folder / "python3")
    assert _chosen(folder) == expected
