"""Explicit managed-policy evidence for the ACP drivers (NATIVE_PROTOCOLS §3.6).

``NATIVE_POLICY_BLOCKED`` is only ever reported on explicit evidence: a JSON-RPC error whose
``data`` says so, or one of Grok's known stderr markers. Anything vaguer stays a plain start
failure, because a false policy verdict tells the operator to chase an administrator for nothing.
"""

from __future__ import annotations

import re
from typing import Any

# Fields whose text is read for policy wording; keys starting with "policy" are read as well.
_TEXT_FIELDS = frozenset({"code", "reason", "type", "kind", "status", "message"})
_POLICY_TEXT = re.compile(
    r"policy[_ -]?blocked|managed[_ -]policy|forbidden[_ -]by[_ -]policy"
    r"|\bpolicy\b.*\b(?:blocked|disabled|locked|forbidden|denied)\b"
    r"|\b(?:blocked|disabled|locked|forbidden|denied)\b.*\bpolicy\b",
    re.IGNORECASE,
)
MAX_DEPTH = 4

GROK_STDERR_MARKERS = (
    "always-approve disabled by managed policy",
    "always-approve enable refused: disabled by managed policy",
    "always-approve enable blocked by managed policy",
    "defaultmode=bypasspermissions ignored: disabled by managed policy",
    "disable_bypass_permissions_mode = true",
)


def has_policy_evidence(data: Any, _depth: int = 1) -> bool:
    """True when a JSON-RPC error's ``data`` (searched ``MAX_DEPTH`` levels deep) names a policy
    block, e.g. ``{"policyBlocked": true}`` or ``{"reason": "disabled by managed policy"}``."""
    if _depth > MAX_DEPTH:
        return False
    if isinstance(data, dict):
        for key, value in data.items():
            name = str(key).lower()
            if name.startswith("policy") and value is True:
                return True
            if isinstance(value, str) and (name in _TEXT_FIELDS or name.startswith("policy")):
                if _POLICY_TEXT.search(value):
                    return True
            elif isinstance(value, dict | list) and has_policy_evidence(value, _depth + 1):
                return True
    elif isinstance(data, list):
        return any(has_policy_evidence(item, _depth + 1) for item in data)
    return False


def grok_policy_marker(stderr_text: str) -> str | None:
    """The first Grok managed-policy marker found in (ANSI-free) stderr, if any."""
    lowered = stderr_text.lower()
    for marker in GROK_STDERR_MARKERS:
        if marker in lowered:
            return marker
    return None
