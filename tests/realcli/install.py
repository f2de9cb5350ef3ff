"""Install the pinned real agent CLIs into a cache OUTSIDE the repository (docs/CONFORMANCE.md).

    python tests/realcli/install.py            # install what is missing, print where things are
    python tests/realcli/install.py --check    # install nothing; exit 1 if a required CLI is missing

Cache: ``$GROUPX_REALCLI_CACHE``, default ``~/.cache/groupx-realcli``::

    npm/node_modules/.bin/codex     @openai/codex 0.169.0            (npm)
    npm/node_modules/.bin/claude    @anthropic-ai/claude-code 2.1.197 (npm)
    hermes-venv/bin/hermes          hermes-agent[acp,mcp] 0.19.0     (its own venv)
    kimi-venv/bin/kimi              kimi-cli 1.51.0                  (optional: needs Python >= 3.12)

Idempotent: a component whose pinned version is already there is skipped. The binaries are never
vendored (Claude Code is proprietary). Only the package registries are contacted, through npm and
pip. Stdlib only, so the tests import this module for the paths and pins.
"""

from __future__ import annotations

import argparse
import glob
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

CODEX_VERSION = "0.169.0"
CLAUDE_VERSION = "2.1.197"
HERMES_VERSION = "0.19.0"
KIMI_VERSION = "1.51.0"  # 1.52.0, the latest, is a tombstone that only prints a deprecation notice

# Hermes 0.19 pip-installs a feature's packages the first time that feature is used
# (its own tools/lazy_deps.py; NATIVE_PROTOCOLS §3.9, A4: boto3 for the Bedrock provider). With
# the `custom` provider the tier uses, nothing was installed lazily (the venv was unchanged after a full run),
# so nothing extra is needed here; the tier also turns lazy installs off
# (HERMES_DISABLE_LAZY_INSTALLS=1, security.allow_lazy_installs: false) so a test never needs a
# registry. Packages listed here would be installed into the venv up front.
HERMES_EXTRAS: tuple[str, ...] = ()

NETWORK_HINTS = (
    "ENOTFOUND",
    "ETIMEDOUT",
    "ECONNREFUSED",
    "ECONNRESET",
    "EAI_AGAIN",
    "ENETUNREACH",
    "network request",
    "Failed to establish a new connection",
    "Temporary failure in name resolution",
    "Network is unreachable",
    "Max retries exceeded",
    "Could not fetch URL",
    "No matching distribution found",
    "ReadTimeoutError",
    "Connection refused",
)


def cache_dir() -> Path:
    return Path(os.environ.get("GROUPX_REALCLI_CACHE") or Path.home() / ".cache" / "groupx-realcli").expanduser()


@dataclass(frozen=True)
class Cli:
    name: str
    version: str
    binary: Path
    required: bool


def clis(cache: Path | None = None) -> dict[str, Cli]:
    cache = cache or cache_dir()
    bin_dir = cache / "npm" / "node_modules" / ".bin"
    return {
        "codex": Cli("codex", CODEX_VERSION, bin_dir / "codex", True),
        "claude": Cli("claude", CLAUDE_VERSION, bin_dir / "claude", True),
        "hermes": Cli("hermes", HERMES_VERSION, cache / "hermes-venv" / "bin" / "hermes", True),
        "kimi": Cli("kimi", KIMI_VERSION, cache / "kimi-venv" / "bin" / "kimi", False),
    }


# ---- what is installed ---------------------------------------------------------------------------


def _npm_version(cache: Path, package: str) -> str | None:
    manifest = cache / "npm" / "node_modules" / package / "package.json"
    try:
        import json

        return json.loads(manifest.read_text()).get("version")
    except (OSError, ValueError):
        return None


def _venv_has(venv: Path, distribution: str, version: str | None = None) -> bool:
    wanted = distribution.replace("-", "_").lower()
    for path in glob.glob(str(venv / "lib" / "python3*" / "site-packages" / "*.dist-info")):
        name, _, found = Path(path).name.removesuffix(".dist-info").partition("-")
        if name.replace("-", "_").lower() == wanted and (version is None or found == version):
            return True
    return False


def codex_ok(cache: Path) -> bool:
    return _npm_version(cache, "@openai/codex") == CODEX_VERSION and clis(cache)["codex"].binary.exists()


def claude_ok(cache: Path) -> bool:
    return _npm_version(cache, "@anthropic-ai/claude-code") == CLAUDE_VERSION and clis(cache)["claude"].binary.exists()


def hermes_ok(cache: Path) -> bool:
    venv = cache / "hermes-venv"
    return (
        clis(cache)["hermes"].binary.exists()
        and _venv_has(venv, "hermes_agent", HERMES_VERSION)
        and _venv_has(venv, "agent_client_protocol")
        and _venv_has(venv, "mcp")
        and all(_venv_has(venv, extra.split("==")[0]) for extra in HERMES_EXTRAS)
    )


def kimi_ok(cache: Path) -> bool:
    return clis(cache)["kimi"].binary.exists() and _venv_has(cache / "kimi-venv", "kimi_cli", KIMI_VERSION)


# ---- installing ----------------------------------------------------------------------------------


class RegistryUnreachable(RuntimeError):
    pass


def _run(argv: list[str], *, what: str, registry: str, timeout: float = 1200) -> None:
    print(f"[realcli] {what}: {' '.join(argv)}", flush=True)
    started = time.monotonic()
    try:
        proc = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            timeout=timeout,
            env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1", "npm_config_update_notifier": "false"},
        )
    except subprocess.TimeoutExpired as exc:
        raise RegistryUnreachable(
            f"{what} did not finish within {timeout:g} s; is the {registry} reachable from this machine?"
        ) from exc
    output = (proc.stdout or "") + (proc.stderr or "")
    if proc.returncode != 0:
        tail = "\n".join(output.strip().splitlines()[-25:])
        if any(hint in output for hint in NETWORK_HINTS):
            raise RegistryUnreachable(
                f"{what} failed: the {registry} could not be reached (or does not serve the "
                f"pinned version). Last lines:\n{tail}"
            )
        raise RuntimeError(f"{what} failed with exit code {proc.returncode}. Last lines:\n{tail}")
    print(f"[realcli] {what}: done in {time.monotonic() - started:.0f} s", flush=True)


def install_npm(cache: Path) -> None:
    if codex_ok(cache) and claude_ok(cache):
        print(f"[realcli] codex {CODEX_VERSION} and claude {CLAUDE_VERSION}: already installed")
        return
    npm = shutil.which("npm")
    if npm is None:
        raise RuntimeError("npm is not on PATH: install Node.js 20+ and npm first")
    prefix = cache / "npm"
    prefix.mkdir(parents=True, exist_ok=True)
    manifest = prefix / "package.json"
    if not manifest.exists():  # keeps npm from walking up to some other package.json
        manifest.write_text('{"name": "groupx-realcli", "private": true}\n')
    _run(
        [
            npm,
            "install",
            "--prefix",
            str(prefix),
            "--no-audit",
            "--no-fund",
            f"@openai/codex@{CODEX_VERSION}",
            f"@anthropic-ai/claude-code@{CLAUDE_VERSION}",
        ],
        what="npm install codex + claude",
        registry="npm registry",
    )
    if not (codex_ok(cache) and claude_ok(cache)):
        raise RuntimeError(f"npm finished but {prefix}/node_modules/.bin/codex or claude is missing")


def _make_venv(python: str, venv: Path) -> Path:
    pip = venv / "bin" / "pip"
    if not pip.exists():
        _run([python, "-m", "venv", "--clear", str(venv)], what=f"venv {venv.name}", registry="(local)")
    return pip


def install_hermes(cache: Path) -> None:
    if hermes_ok(cache):
        print(f"[realcli] hermes-agent {HERMES_VERSION}: already installed")
        return
    python = os.environ.get("GROUPX_REALCLI_PYTHON") or shutil.which("python3") or sys.executable
    pip = _make_venv(python, cache / "hermes-venv")
    _run(
        [str(pip), "install", "-q", f"hermes-agent[acp,mcp]=={HERMES_VERSION}", *HERMES_EXTRAS],
        what="pip install hermes-agent",
        registry="Python package index",
    )
    if not hermes_ok(cache):
        raise RuntimeError("pip finished but hermes-venv/bin/hermes (or its acp/mcp extras) is missing")


def python312() -> str | None:
    """A Python >= 3.12 interpreter for kimi-cli, or None."""
    candidates = [
        os.environ.get("GROUPX_REALCLI_PYTHON312"),
        shutil.which("python3.13"),
        shutil.which("python3.12"),
        *sorted(glob.glob(str(Path.home() / ".pyenv" / "versions" / "3.1[2-9]*" / "bin" / "python3")), reverse=True),
        *sorted(glob.glob("/usr/bin/python3.1[2-9]"), reverse=True),
    ]
    if os.environ.get("PYTHON_PREFIX"):
        candidates.append(str(Path(os.environ["PYTHON_PREFIX"]) / "bin" / "python3"))
    for candidate in candidates:
        if not candidate or not Path(candidate).exists():
            continue
        check = subprocess.run(
            [candidate, "-c", "import sys, venv; sys.exit(sys.version_info < (3, 12))"], capture_output=True, timeout=30
        )
        if check.returncode == 0:
            return candidate
    return None


def install_kimi(cache: Path) -> str:
    if kimi_ok(cache):
        return f"kimi-cli {KIMI_VERSION}: already installed"
    python = python312()
    if python is None:
        return (
            "kimi-cli skipped: it needs Python >= 3.12 and none was found (set GROUPX_REALCLI_PYTHON312 "
            "to one); the kimi scenarios will be skipped"
        )
    pip = _make_venv(python, cache / "kimi-venv")
    _run(
        [str(pip), "install", "-q", f"kimi-cli=={KIMI_VERSION}"],
        what="pip install kimi-cli",
        registry="Python package index",
    )
    return f"kimi-cli {KIMI_VERSION}: installed with {python}"


def report(cache: Path) -> list[str]:
    present = {"codex": codex_ok(cache), "claude": claude_ok(cache), "hermes": hermes_ok(cache), "kimi": kimi_ok(cache)}
    lines = []
    for name, cli in clis(cache).items():
        state = "ok" if present[name] else ("MISSING" if cli.required else "absent (optional)")
        lines.append(f"  {name:<7}{cli.version:<9}{state:<19}{cli.binary}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="install nothing; exit 1 if a required CLI is missing")
    parser.add_argument("--no-kimi", action="store_true", help="do not install the optional kimi-cli")
    args = parser.parse_args(argv)
    cache = cache_dir()
    print(f"[realcli] cache: {cache}")
    failures: list[str] = []
    if not args.check:
        cache.mkdir(parents=True, exist_ok=True)
        for step in (install_npm, install_hermes):
            try:
                step(cache)
            except (RegistryUnreachable, RuntimeError, OSError) as exc:
                failures.append(str(exc))
                print(f"[realcli] ERROR: {exc}", file=sys.stderr, flush=True)
        if not args.no_kimi:
            try:
                print(f"[realcli] {install_kimi(cache)}")
            except (RegistryUnreachable, RuntimeError, OSError) as exc:
                print(f"[realcli] kimi-cli (optional) not installed: {exc}", file=sys.stderr)
    print("[realcli] installed CLIs:")
    print("\n".join(report(cache)))
    missing = [
        name
        for name, cli in clis(cache).items()
        if cli.required and not {"codex": codex_ok, "claude": claude_ok, "hermes": hermes_ok}[name](cache)
    ]
    if missing:
        print(f"[realcli] required CLIs missing: {', '.join(missing)}", file=sys.stderr)
        return 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
