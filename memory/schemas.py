"""Memory, identity and context over REST as schemas (PROTOCOL §10.4, §10.5; FEATURES §11, §15;
docs/DECISIONS.md D34). The rules and their order stay in ``memory.inputs`` and ``memory.engine``
(MCP calls them too); each model runs them first (``groupx_site/core/contract.py``)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from groupx_site.core.contract import Checked
from memory import engine, inputs
from memory.models import AGENT_MEMORY_TYPES, IDENTITY_KINDS, SCOPE_TYPES
from rooms.models import ROOM_ID
from rooms.schemas import ClientCommandId, EventReference, MessageContent, Response
from rooms.validation import AGENT_ACTOR_RE

ActorId = Annotated[str, Field(pattern=inputs.ACTOR_RE.pattern, description="agent:<id>, user:<id> or system:<id>")]
AgentId = Annotated[str, Field(pattern=AGENT_ACTOR_RE.pattern, description="agent:<id>")]
WritableKind = Literal[inputs.WRITABLE_MEMORY_KINDS]  # type: ignore[valid-type]
IdentityKind = Literal[IDENTITY_KINDS]  # type: ignore[valid-type]


class RoomScope(BaseModel):
    """Another room id is a lookup that fails: 404 UNKNOWN_TARGET."""

    model_config = ConfigDict(extra="forbid")
    type: Literal["room"]
    id: Annotated[str, Field(min_length=1, max_length=inputs.MAX_SCOPE_ID, examples=[ROOM_ID])]


class CorrelationScope(BaseModel):
    model_config = ConfigDict(extra="forbid")
    type: Literal["correlation"]
    id: Annotated[str, Field(min_length=1, max_length=inputs.MAX_SCOPE_ID, description="A correlation id")]


class AgentScope(BaseModel):
    """An agent's core memory: the id is the agent's actor id."""

    model_config = ConfigDict(extra="forbid")
    type: Literal["agent"]
    id: AgentId


assert set(SCOPE_TYPES) == {"room", "correlation", "agent"}  # the scope models cover every type


class _Record(Checked):
    """What every memory or identity write carries."""

    clientCommandId: ClientCommandId
    content: MessageContent
    sourceEventId: EventReference | None = None


class MemoryWriteBody(_Record):
    """Remember: room and correlation records, or an agent's core memory (agent scope)."""

    model_config = ConfigDict(
        title="MemoryWriteBody",
        json_schema_extra={
            "examples": [
                {
                    "clientCommandId": "c-1",
                    "scope": {"type": "room", "id": ROOM_ID},
                    "kind": "decision",
                    "content": "We keep SQLite.",
                }
            ]
        },
    )
    check = inputs.check_memory_write

    scope: RoomScope | CorrelationScope | AgentScope
    kind: WritableKind
    subjectActorId: ActorId | None = None


class IdentityWriteBody(_Record):
    model_config = ConfigDict(title="IdentityWriteBody")
    check = inputs.check_identity_write

    subjectActorId: AgentId
    kind: IdentityKind


def _check_memory_supersede(payload: object) -> inputs.Supersede:
    return inputs.check_supersede(payload, inputs.WRITABLE_MEMORY_KINDS)


def _check_identity_supersede(payload: object) -> inputs.Supersede:
    return inputs.check_supersede(payload, IDENTITY_KINDS)


class MemorySupersedeBody(_Record):
    model_config = ConfigDict(title="MemorySupersedeBody")
    check = _check_memory_supersede

    kind: WritableKind | None = Field(None, description="The old record's kind when absent.")


class IdentitySupersedeBody(_Record):
    model_config = ConfigDict(title="IdentitySupersedeBody")
    check = _check_identity_supersede

    kind: IdentityKind | None = Field(None, description="The old record's kind when absent.")


class RetractBody(Checked):
    model_config = ConfigDict(title="RetractBody")
    check = inputs.check_retract

    clientCommandId: ClientCommandId


class CompactBody(Checked):
    model_config = ConfigDict(title="CompactBody")
    check = engine.check_compact

    clientCommandId: ClientCommandId


class ResetBody(Checked):
    model_config = ConfigDict(title="ResetBody")
    check = engine.check_reset

    clientCommandId: ClientCommandId
    resetNativeSessions: bool = Field(
        False, description="Also close every agent's native session: its next Turn starts on a fresh one (D41)."
    )


# ---- list queries (offset cursor) ----------------------------------------------------------------

Cursor = Annotated[int, Field(ge=0, le=2**31, description="The offset nextCursor gave; 0 first.")]
Limit = Annotated[int, Field(ge=1, le=inputs.LIST_MAX, description=f"Default {inputs.LIST_DEFAULT}.")]
QueryText = Annotated[str, Field(max_length=inputs.MAX_QUERY, description="Words to look for (case-insensitive).")]


class MemoryListQuery(Checked):
    check = inputs.check_memory_list
    query_check = True

    scopeType: Literal[SCOPE_TYPES] = None  # type: ignore[valid-type]
    scopeId: str = None
    agentMemoryType: Literal[AGENT_MEMORY_TYPES] = None  # type: ignore[valid-type]
    kind: str = None
    authorActorId: str = None
    subjectActorId: str = None
    query: QueryText = None
    cursor: Cursor = 0
    limit: Limit = inputs.LIST_DEFAULT
    includeHistory: bool = Field(False, description="Superseded and retracted versions too.")


class IdentityListQuery(Checked):
    check = inputs.check_identity_list
    query_check = True

    subjectActorId: str = None
    authorActorId: str = None
    kind: str = None
    query: QueryText = None
    cursor: Cursor = 0
    limit: Limit = inputs.LIST_DEFAULT
    includeHistory: bool = Field(False, description="Superseded and retracted versions too.")


# ---- responses -----------------------------------------------------------------------------------


class RecordScope(BaseModel):
    type: str
    id: str


class MemoryRecordOut(Response):
    memoryId: str
    scope: RecordScope
    agentMemoryType: str | None
    kind: str
    authorActorId: str
    subjectActorId: str | None
    content: str
    sourceEventId: str | None
    sourceKind: str
    status: str
    supersedesMemoryId: str | None
    createdAt: str
    retractedAt: str | None


class IdentityRecordOut(Response):
    identityId: str
    subjectActorId: str
    authorActorId: str
    kind: str
    content: str
    sourceEventId: str | None
    sourceKind: str
    status: str
    supersedesIdentityId: str | None
    createdAt: str
    retractedAt: str | None


class MemoryResult(Response):
    memory: MemoryRecordOut


class IdentityResult(Response):
    identity: IdentityRecordOut


class MemoryPage(Response):
    items: list[MemoryRecordOut]
    nextCursor: int | None = None


class IdentityPage(Response):
    items: list[IdentityRecordOut]
    nextCursor: int | None = None


class ContextUsage(Response):
    roomId: str
    throughSeq: int
    estimatedCharacters: int
    maxCharacters: int
    compactionTriggerCharacters: int
    utilizationPercent: Annotated[int, Field(ge=0, le=100)]
    uncompactedMessageCount: int
    compactable: bool
    summaryThroughSeq: int | None = None


class CompactResult(Response):
    compacted: bool
    usage: ContextUsage


class ResetResult(Response):
    reset: bool
    throughSeq: int
    resetNativeSessions: bool
    usage: ContextUsage
