"""The install tier (``make test-install``, run by ``.ci/run``): the wheel installed as a tool would be.

A fresh virtualenv outside the checkout gets the wheel of ``dist/`` and nothing of the checkout (the
tier checks that ``agents`` imports from that virtualenv's site-packages); ``groupx start`` in an
empty folder writes its ``groupx.json`` and the demo room there (no agent CLI on its PATH); the room
page, its script and style files, ``/api/docs`` and the admin's login page answer 200; ``@all`` gets
an answer from every demo agent; ``groupx stop`` stops it. pipx and ``uv tool install`` do the same
(a virtualenv of the tool's own with the wheel in it); this tier does it with the standard library.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import httpx

from tests.server import free_port, wait_until

DEADLINE = 120.0


def step(message: str) -> None:
    print(f"[install tier] {message}", flush=True)


def clean_env(path: str) -> dict[str, str]:
    """Nothing of the checkout: no PYTHONPATH, no GROUPX_*, no virtualenv of the caller."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("GROUPX_", "PYTHON", "VIRTUAL_ENV", "DJANGO_")) and k not in ("DISPLAY", "WAYLAND_DISPLAY")
    }
    return {**env, "PATH": path, "PYTHONUNBUFFERED": "1"}


def run(argv: list, *, cwd: Path, env: dict, timeout: float = 600) -> str:
    done = subprocess.run([str(a) for a in argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise SystemExit(
            f"[install tier] {' '.join(map(str, argv))} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"
        )
    return done.stdout


def status(url: str) -> int:
    return httpx.get(url, timeout=10, follow_redirects=False).status_code


def check_room(origin: str) -> None:
    page = httpx.get(f"{origin}/", timeout=10)
    assert page.status_code == 200, f"the room page answered {page.status_code}"
    files = re.findall(r'(?:src|href)="(/static/[^"]+\.(?:js|css|svg))"', page.text)
    assert any(f.endswith(".js") for f in files) and any(f.endswith(".css") for f in files), files
    for path in [*files, "/static/rooms/api.js", "/api/docs", "/admin/login/", "/setup"]:
        code = status(f"{origin}{path}")
        assert code == 200, f"{path} answered {code}"
    step(f"200 for the room page, {len(files)} of its files, /api/docs, /admin/login/ and /setup")


def check_chinese(origin: str, python: Path, cwd: Path, env: dict) -> None:
    """The wheel carries the compiled Chinese catalogs, and a browser asking for Chinese gets the
    room, /setup and the page scripts' strings in it (no gettext on the machine is needed)."""
    catalogs = run(
        [python, "-c", "import groupx_site, pathlib; print(pathlib.Path(groupx_site.__file__).parent / 'locale')"],
        cwd=cwd,
        env=env,
    ).strip()
    for domain in ("django", "djangojs"):
        mo = Path(catalogs) / "zh_Hans" / "LC_MESSAGES" / f"{domain}.mo"
        assert mo.is_file() and "site-packages" in str(mo), f"{mo} is not in the installed wheel"
    chinese = {"Accept-Language": "zh-CN,zh;q=0.9"}
    room = httpx.get(f"{origin}/", headers=chinese, timeout=10).text
    assert '<html lang="zh-hans">' in room and "发给：所有人" in room, room[:400]
    setup = httpx.get(f"{origin}/setup", headers=chinese, timeout=10).text
    assert "<h1>GroupX · Agent 设置</h1>" in setup, setup[:400]
    scripts = httpx.get(f"{origin}/jsi18n/", headers=chinese, timeout=10).text
    assert '"Send to %(names)s"' in scripts and "\\u53d1\\u7ed9" in scripts  # "发给"
    step(f"the wheel's Chinese catalogs in {catalogs}: the room, /setup and /jsi18n/ in Chinese")


def all_answer(origin: str, agents: list[str]) -> None:
    accepted = httpx.post(
        f"{origin}/api/messages",
        timeout=10,
        json={"clientCommandId": f"install-{uuid.uuid4()}", "to": ["@all"], "content": "hello from the install tier"},
    )
    assert accepted.status_code == 202, accepted.text
    turns = {turn["turnId"]: turn["target"] for turn in accepted.json()["turns"]}
    assert sorted(turns.values()) == sorted(agents), (turns, agents)

    def completed():
        events = httpx.get(f"{origin}/api/events/page", params={"limit": 500}, timeout=10)
        found = events.json().get("events", []) if events.status_code == 200 else []
        done = {e["body"].get("turnId") for e in found if e["type"] == "turn.completed"}
        return set(turns) <= done

    wait_until(completed, timeout=DEADLINE, interval=0.1, message="every demo agent's answer to @all")
    step(f"@all answered by {', '.join(sorted(turns.values()))}")


def main(dist: Path) -> int:
    wheels = sorted(dist.glob("groupx-*.whl"))
    if not wheels:
        raise SystemExit(f"[install tier] no wheel in {dist}: run `make dist`")
    with tempfile.TemporaryDirectory(prefix="groupx-install-") as folder:
        root = Path(folder)
        venv = root / "tool-venv"
        base = getattr(sys, "_base_executable", sys.executable)
        run([base, "-m", "venv", venv], cwd=root, env=clean_env(os.environ["PATH"]))
        bin_dir = venv / "bin"
        # Only the standard tools and python3 (the demo agents start with `#!/usr/bin/env python3`):
        # no agent CLI this machine may have is found, so the starter config is the demo room.
        tools = root / "path"
        tools.mkdir()
        for name in ("python3", "env", "sh"):
            found = shutil.which(name)
            if found:
                (tools / name).symlink_to(found)
        env = clean_env(f"{bin_dir}{os.pathsep}{tools}")
        run([bin_dir / "python", "-m", "pip", "install", "-q", wheels[-1].resolve()], cwd=root, env=env)
        where = run([bin_dir / "python", "-c", "import agents; print(agents.__file__)"], cwd=root, env=env).strip()
        assert "site-packages" in where and str(venv) in where, f"agents imported from {where}"
        step(f"{wheels[-1].name} installed; agents imports from {where}")
        room = root / "a project"
        room.mkdir()
        port = free_port()
        log = open(room / "start.log", "wb")  # noqa: SIM115 (the server's output, read on failure)
        server = subprocess.Popen(
            [bin_dir / "groupx", "start", "--port", str(port), "--no-open"],
            cwd=room,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        origin = f"http://127.0.0.1:{port}"
        try:

            def ready():
                if server.poll() is not None:
                    raise SystemExit(f"[install tier] groupx start exited:\n{(room / 'start.log').read_text()}")
                try:
                    return httpx.get(f"{origin}/api/health", timeout=2).json().get("readiness") == "ready"
                except (httpx.HTTPError, ValueError):
                    return False

            wait_until(ready, timeout=DEADLINE, interval=0.1, message="the room to be ready")
            config = json.loads((room / "groupx.json").read_text())
            agents = [f"agent:{agent_id}" for agent_id in config["agents"]]
            assert agents and all(a.startswith("agent:demo-") for a in agents), config["agents"]
            assert (room / ".groupx" / "groupx.db").is_file()
            step(f"groupx start wrote {room / 'groupx.json'} with the demo room: {', '.join(agents)}")
            check_room(origin)
            check_chinese(origin, bin_dir / "python", root, env)
            all_answer(origin, agents)
            run([bin_dir / "groupx", "stop"], cwd=room, env=env, timeout=120)
            server.wait(timeout=60)
            step("groupx stop stopped it")
        finally:
            if server.poll() is None:
                server.terminate()
                server.wait(timeout=30)
            log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1] if len(sys.argv) > 1 else "dist")))
