"""The wheel carries everything the room uses at run time (templates, static files with the vendored
JavaScript, migrations, the demo agents' launchers, executable) and passes ``check-wheel-contents``
(pinned in the test extra; its configuration in pyproject.toml). ``make test-install`` installs it."""

from __future__ import annotations

import stat
import subprocess
import sys
import tarfile
import zipfile

from tests.server import REPO

REQUIRED = [
    "groupx_site/templates/rooms/room.html",
    "groupx_site/templates/setup_wizard/setup.html",
    "groupx_site/static/rooms/api.js",
    "groupx_site/static/rooms/room.css",
    "groupx_site/static/vendor/marked/",
    "groupx_site/static/vendor/dompurify/",
    "groupx_site/static/vendor/highlight/",
    "rooms/migrations/0001_initial.py",
    "memory/templates/admin/memory/supersede.html",
    "agents/fakes/fake_acp.py",
]
LAUNCHERS = ["claude", "codex", "demo-assistant", "grok", "hermes", "kimi"]


def test_the_wheel_carries_what_the_room_runs_and_passes_check_wheel_contents(tmp_path):
    # As `make dist` builds them: the sdist, then the wheel from the sdist (so the sdist is complete too).
    built = subprocess.run(
        [sys.executable, "-m", "build", "--sdist", "--wheel", "--outdir", str(tmp_path), str(REPO)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stdout + built.stderr
    (wheel,) = tmp_path.glob("groupx-*.whl")
    checked = subprocess.run(
        [sys.executable, "-m", "check_wheel_contents", str(wheel)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert checked.returncode == 0 and checked.stdout.strip().endswith("OK"), checked.stdout + checked.stderr
    archive = zipfile.ZipFile(wheel)
    names = archive.namelist()
    for required in REQUIRED:
        assert any(name.startswith(required) for name in names), required
    for launcher in LAUNCHERS:
        mode = archive.getinfo(f"agents/fakes/bin/{launcher}").external_attr >> 16
        assert mode & stat.S_IXUSR, launcher
    assert not any("/tests/" in name or name.startswith("tests/") for name in names)
    (sdist,) = tmp_path.glob("groupx-*.tar.gz")
    with tarfile.open(sdist) as archive:
        top = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    assert {
        "setup.py",
        "pyproject.toml",
        "CHANGELOG.md",
        "templates/rooms/room.html",
        "static/rooms/api.js",
        "agents/fakes/bin/kimi",
    } <= top
