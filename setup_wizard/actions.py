"""The setup contract (PROTOCOL §10.6, FEATURES §2.3): the snapshot a page edits, and the strict save.

The draft is deliberately smaller than ``groupx.json``: an agent is only
``id/driver/name/identity/command/cwd/enabled``. Transport, access, sandbox, model and approval
are not settings of GroupX, so a draft that carries them is refused rather than silently trimmed.
Limits and timeouts are not in the draft either; a save keeps the ones the file already has.

No Django here: the schema and the detection are plain functions, tested and reused without
settings (``groupx doctor`` runs before any exist).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from groupx_site.core.driver_table import for_the_page as driver_choices
from groupx_site.core.errors import GroupXError
from setup_wizard import detect
from setup_wizard.config import (
    AGENT_ID_RE,
    DEFAULT_AGENT_IDS,
    DESTINATION_RE,
    DISPLAY_NAMES,
    RESERVED_AGENT_IDS,
    AgentConfig,
    CommandSpec,
    ConfigError,
    DriverName,
    GroupXConfig,
    check_script_here,
    parse_config,
    parse_json,
    write_config,
)
from setup_wizard.starter import demo_agents
from setup_wizard.storage_check import storage_refusal

DEFAULT_PORT = 4310
DEFAULT_STORAGE = ".groupx/groupx.db"
ASSISTANT_NAME = "房间助理"
# The room assistant (FEATURES §13): the page shows its card and a first setup turns it on (PROTOCOL
# §10.6). A save without the card (an older page) keeps the file's ``assistant`` block (D49).
ASSISTANT_AVAILABLE = True
# Names a user may expect to find here; they get a message saying why there is no such setting.
NOT_SETTINGS = {"transport", "access", "sandbox", "model", "approval", "approvalPolicy", "permissionMode"}

Driver = DriverName


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class DraftCommand(Strict):
    executable: Annotated[str, Field(min_length=1)]
    prefixArgs: Annotated[list[str], Field(max_length=1)] = Field(default_factory=list)


class DraftAgent(Strict):
    id: Annotated[str, Field(min_length=1, max_length=64)]
    driver: Driver
    name: Annotated[str, Field(min_length=1, max_length=64)]
    identity: Annotated[str, Field(max_length=32_768)] = ""
    command: DraftCommand
    cwd: Annotated[str, Field(min_length=1)]
    enabled: bool = True
    # Kept as the file has it (D51); the pattern is the schema's, so the document states it.
    ssh: Annotated[str, Field(max_length=320, pattern=DESTINATION_RE.pattern)] | None = None


class DraftBrain(Strict):
    driver: Driver
    command: DraftCommand | None = None
    cwd: Annotated[str, Field(min_length=1)]


class DraftAssistant(Strict):
    enabled: bool = False
    name: Annotated[str, Field(min_length=1, max_length=64)] = ASSISTANT_NAME
    brain: DraftBrain | None = None
    extraInstructions: Annotated[str, Field(max_length=32_768)] = ""


class Draft(Strict):
    serverPort: Annotated[int, Field(ge=1, le=65535)]
    storagePath: Annotated[str, Field(min_length=1)]
    agents: Annotated[list[DraftAgent], Field(min_length=1)]
    assistant: DraftAssistant | None = None


REVISION_PATTERN = r"^[0-9a-f]{64}$"


class SaveRequest(Strict):
    config: Draft
    # The snapshot's ``revision``: a save made from an older snapshot is refused (409
    # CLIENT_COMMAND_CONFLICT) rather than overwriting a newer file (docs/DECISIONS.md D100).
    revision: Annotated[str, Field(pattern=REVISION_PATTERN)] | None = None


# --- the snapshot -------------------------------------------------------------------------------


def command_draft(command: Any, default: str) -> dict[str, Any]:
    if command is None:
        return {"executable": default, "prefixArgs": []}
    if isinstance(command, str):
        return {"executable": command, "prefixArgs": []}
    return {"executable": command.executable, "prefixArgs": list(command.prefixArgs)}


def draft_from_config(config: GroupXConfig) -> dict[str, Any]:
    """The editable form of a parsed file; relative paths stay relative, as the user wrote them."""
    agents = config.agents
    if agents is None:  # the implicit default roster is shown explicitly so it can be edited
        agents = {agent_id: AgentConfig(cwd=".") for agent_id in DEFAULT_AGENT_IDS}
    entries = []
    for agent_id, agent in agents.items():
        driver = agent.driver or agent_id
        entries.append(
            {
                "id": agent_id,
                "driver": driver,
                "name": agent.name or DISPLAY_NAMES.get(agent_id, agent_id),
                "identity": agent.identity,
                "command": command_draft(agent.command, driver),
                "cwd": agent.cwd,
                "enabled": agent.enabled,
                **({"ssh": agent.ssh} if agent.ssh else {}),
            }
        )
    # An existing file without an assistant keeps it off (PROTOCOL §10.6).
    assistant: dict[str, Any] = {"enabled": False, "name": ASSISTANT_NAME, "brain": None, "extraInstructions": ""}
    if config.assistant is not None:
        brain = config.assistant.brain
        assistant = {
            "enabled": config.assistant.enabled,
            "name": config.assistant.name,
            "extraInstructions": config.assistant.extraInstructions,
            "brain": brain
            and {"driver": brain.driver, "command": command_draft(brain.command, brain.driver), "cwd": brain.cwd},
        }
    return {
        "serverPort": config.server.port,
        "storagePath": config.storage.path,
        "agents": entries,
        "assistant": assistant,
    }


def demo_drafts(workdir: Path) -> list[dict[str, Any]]:
    return [
        {
            "id": agent_id,
            "driver": entry["driver"],
            "name": entry["name"],
            "identity": entry["identity"],
            "command": {"executable": entry["command"], "prefixArgs": []},
            "cwd": entry["cwd"],
            "enabled": True,
        }
        for agent_id, entry in demo_agents(workdir).items()
    ]


def starter_draft(config_path: Path, drivers: list[detect.DriverStatus]) -> dict[str, Any]:
    """First run: all five drivers listed, enabled only when found; the demo agents when none is."""
    workdir = str(config_path.parent.resolve())
    agents = [
        {
            "id": d.driver,
            "driver": d.driver,
            "name": DISPLAY_NAMES[d.driver],
            "identity": "",
            "command": {"executable": d.driver, "prefixArgs": []},
            "cwd": workdir,
            "enabled": d.found,
        }
        for d in drivers
    ]
    if not any(d.found for d in drivers):
        agents += demo_drafts(Path(workdir))
    brain_from = next((a for a in agents if a["enabled"]), None)
    assistant = {
        # The protocol turns it on for a first setup, on the first enabled agent's CLI.
        "enabled": ASSISTANT_AVAILABLE and brain_from is not None,
        "name": ASSISTANT_NAME,
        "extraInstructions": "",
        "brain": brain_from
        and {"driver": brain_from["driver"], "command": dict(brain_from["command"]), "cwd": workdir},
    }
    return {"serverPort": DEFAULT_PORT, "storagePath": DEFAULT_STORAGE, "agents": agents, "assistant": assistant}


def snapshot(config_path: Path, *, runtime_active: bool) -> dict[str, Any]:
    drivers = detect.detect_drivers()
    result: dict[str, Any] = {
        "configPath": str(config_path),
        "existing": config_path.exists(),
        "runtimeActive": runtime_active,
        "assistantAvailable": ASSISTANT_AVAILABLE,
        "drivers": [d.as_json() for d in drivers],
        # The driver table (groupx_site/core/driver_table.py): the page's driver lists read it from here.
        "driverChoices": driver_choices(),
        "demoAgents": demo_drafts(config_path.parent.resolve()),
    }
    draft = None
    result["revision"] = None
    if result["existing"]:
        source = str(config_path)
        try:  # the draft and its revision from the same bytes: a save from it is checked against them
            data, result["revision"] = current_file(config_path)
            if data is not None:  # None: removed since it was seen; the starter draft is shown
                draft = draft_from_config(parse_config(parse_json(data.decode("utf-8"), source=source), source=source))
        except ConfigError as error:
            result["existingConfigError"] = str(error)
        except (OSError, UnicodeDecodeError) as error:
            result["existingConfigError"] = f"{source}: cannot be read ({error})"
    result["config"] = draft or starter_draft(config_path, drivers)
    return result


# --- the save -----------------------------------------------------------------------------------


def issue(path: str, code: str, message: str) -> dict[str, str]:
    return {"path": path, "code": code, "message": message}


def _message(error: dict[str, Any]) -> str:
    message = str(error.get("msg", "invalid"))
    return message.removeprefix("Value error, ")


def _structural_issues(error: ValidationError) -> list[dict[str, str]]:
    issues = []
    for e in error.errors():
        loc = [str(part) for part in e["loc"]]
        path = ".".join(loc)
        if e["type"] == "extra_forbidden":
            key = loc[-1] if loc else ""
            if key in NOT_SETTINGS:
                issues.append(
                    issue(
                        path,
                        "forbidden_field",
                        f"{key} is not a GroupX setting: agents always run unrestricted and structured",
                    )
                )
            else:
                issues.append(issue(path, "unknown_field", f"unknown field {key!r}"))
        else:
            issues.append(issue(path, e["type"], _message(e)))
    return issues


def _command_issues(path: str, command: DraftCommand | None, *, remote: bool = False) -> list[dict[str, str]]:
    if command is None or not command.prefixArgs:
        return []
    try:
        spec = CommandSpec.model_validate(command.model_dump())
    except ValidationError as error:
        return [issue(path, "invalid_command", _message(error.errors()[0]))]
    try:
        if not remote:  # a remote agent's script is on its host (D51)
            check_script_here(spec)
    except ValueError as error:
        return [issue(path, "invalid_command", str(error))]
    return []


def _semantic_issues(draft: Draft, config_dir: Path) -> list[dict[str, str]]:
    issues: list[dict[str, str]] = []
    seen: set[str] = set()
    for index, agent in enumerate(draft.agents):
        at = f"config.agents.{index}"
        if agent.id in RESERVED_AGENT_IDS:
            issues.append(issue(f"{at}.id", "reserved_id", f"{agent.id!r} is reserved for the room assistant"))
        elif not AGENT_ID_RE.match(agent.id):
            issues.append(
                issue(
                    f"{at}.id",
                    "invalid_id",
                    "an id starts and ends with a letter or digit and uses "
                    "only A-Z a-z 0-9 . _ - (at most 64 characters)",
                )
            )
        elif agent.id in seen:
            issues.append(issue(f"{at}.id", "duplicate_id", f"another agent already has the id {agent.id!r}"))
        seen.add(agent.id)
        if agent.ssh:  # a remote cwd cannot be looked at from here: `groupx doctor` checks the host
            issues += _ssh_issues(at, agent)
        elif not (config_dir / agent.cwd).is_dir():
            issues.append(issue(f"{at}.cwd", "cwd_not_found", f"no such directory: {agent.cwd}"))
        issues += _command_issues(f"{at}.command", agent.command, remote=agent.ssh is not None)
    if refusal := storage_refusal((config_dir / draft.storagePath).resolve()):
        issues.append(issue("config.storagePath", "storage_not_a_room", refusal))
    if not any(agent.enabled for agent in draft.agents):
        issues.append(issue("config.agents", "none_enabled", "enable at least one agent"))
    if draft.assistant and draft.assistant.brain:
        issues += _command_issues("config.assistant.brain.command", draft.assistant.brain.command)
        if not (config_dir / draft.assistant.brain.cwd).is_dir():
            issues.append(
                issue("config.assistant.brain.cwd", "cwd_not_found", f"no such directory: {draft.assistant.brain.cwd}")
            )
    elif draft.assistant and draft.assistant.enabled:
        issues.append(
            issue(
                "config.assistant.brain.cwd",
                "brain_required",
                "an enabled assistant needs a working directory for its CLI",
            )
        )
    return issues


def _ssh_issues(at: str, agent: DraftAgent) -> list[dict[str, str]]:
    """The rule between ``ssh`` and ``cwd`` of an agent on another machine (setup_wizard/config.py, D51)."""
    if not agent.cwd.startswith("/"):
        return [issue(f"{at}.cwd", "cwd_not_absolute", f"an absolute path on {agent.ssh}")]
    return []


def validate_draft(body: Any, config_dir: Path) -> Draft:
    """The draft, or INVALID_ENVELOPE with ``details.issues`` naming every offending field."""
    if not isinstance(body, dict):
        raise GroupXError("INVALID_ENVELOPE", "the body must be a JSON object {config: …}")
    try:
        draft = SaveRequest.model_validate(body).config
    except ValidationError as error:
        issues = _structural_issues(error)
    else:
        issues = _semantic_issues(draft, config_dir)
    if issues:
        raise GroupXError(
            "INVALID_ENVELOPE", f"the setup has {len(issues)} problem(s)", details={"issues": issues[:50]}
        )
    return draft


def _command_raw(command: DraftCommand | None) -> Any:
    if command is None:
        return None
    # The string form is the common case and keeps the file readable.
    return command.model_dump() if command.prefixArgs else command.executable


def existing_raw(config_path: Path, data: bytes | None) -> dict[str, Any] | None:
    """The file as written (``data``, its bytes; legacy defaults upgraded), when it exists and is valid."""
    if data is None:
        return None
    try:
        raw = json.loads(data.decode("utf-8"))
        parse_config(raw, source=str(config_path))  # upgrades legacy defaults in place
    except (ValueError, RecursionError, ConfigError):
        return None
    return raw


def build_config(draft: Draft, previous: dict[str, Any] | None) -> dict[str, Any]:
    """The file the draft makes: what the form shows is the draft's, every other key of the file
    (``server.threadsOnOneCpu``, ``storage.url``, ``limits``, ``timeouts``, ``channelLayer``, …)
    stays as it was."""
    previous = previous or {}
    raw: dict[str, Any] = {
        **previous,
        "server": {**(previous.get("server") or {}), "host": "127.0.0.1", "port": draft.serverPort},
        "storage": {**(previous.get("storage") or {}), "path": draft.storagePath},
        "agents": {
            agent.id: {
                "driver": agent.driver,
                "name": agent.name,
                "identity": agent.identity,
                "command": _command_raw(agent.command),
                "cwd": agent.cwd,
                "enabled": agent.enabled,
                **({"ssh": agent.ssh} if agent.ssh else {}),
            }
            for agent in draft.agents
        },
    }
    if draft.assistant is not None:
        assistant = draft.assistant.model_dump(exclude={"brain"})
        if draft.assistant.brain is not None:
            brain = draft.assistant.brain
            assistant["brain"] = {"driver": brain.driver, "cwd": brain.cwd}
            if brain.command is not None:
                assistant["brain"]["command"] = _command_raw(brain.command)
        raw["assistant"] = assistant
    # else: the draft may leave the assistant out (an older page), and the file's block stays
    return raw


def current_file(config_path: Path) -> tuple[bytes | None, str | None]:
    """The file's bytes and its revision, the SHA-256 of those bytes; (None, None) with no file."""
    try:
        data = config_path.read_bytes()
    except FileNotFoundError:
        return None, None
    return data, hashlib.sha256(data).hexdigest()


# One save at a time: each reads the file, checks its revision and replaces it (D100).
_SAVING = threading.Lock()


@contextlib.contextmanager
def one_save_at_a_time(config_path: Path) -> Iterator[None]:
    """This process's threads through a lock, and the processes of one room (split mode's web
    processes all serve /setup) through ``flock`` on the config's folder, which creates no file."""
    with _SAVING:
        folder = os.open(config_path.parent, os.O_RDONLY)
        try:
            fcntl.flock(folder, fcntl.LOCK_EX)
            yield
        finally:
            os.close(folder)  # closing the descriptor releases the lock


def save_draft(config_path: Path, draft: Draft, *, revision: str | None = None) -> dict[str, Any]:
    """The page is always served by a running room, whose sessions are never hot-swapped: a save
    takes effect at ``groupx restart``. With the ``revision`` of the snapshot it was made from, a
    save of a file that has changed since is refused."""
    with one_save_at_a_time(config_path):
        data, current = current_file(config_path)
        if revision is not None and revision != current:
            raise GroupXError(
                "CLIENT_COMMAND_CONFLICT",
                "groupx.json changed since this setup was read; reload the page to see the newer one",
                details={"revision": current},
            )
        raw = build_config(draft, existing_raw(config_path, data))
        try:
            write_config(config_path, raw)  # validates the whole file again, then replaces it atomically
        except ConfigError as error:
            raise GroupXError(
                "INVALID_ENVELOPE",
                "the setup does not make a valid groupx.json",
                details={"issues": [issue("config", "invalid_config", str(error))]},
            ) from None
        saved_revision = current_file(config_path)[1]
    return {
        "saved": True,
        "configPath": str(config_path),
        "agentCount": len(draft.agents),
        "enabledAgentCount": sum(1 for agent in draft.agents if agent.enabled),
        "restartRequired": True,
        "revision": saved_revision,
    }
