"""Identifiers: a readable prefix plus 128 random bits (unguessable, globally unique)."""

from __future__ import annotations

import secrets

# The fixed bindings: the web page's and the operator's (agents/models.py SessionBinding rows).
WEB_BINDING_ID = "binding:web"
OPERATOR_BINDING_ID = "binding:operator"


def new_id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(16)}"


def event_id() -> str:
    return new_id("evt")


def correlation_id() -> str:
    return new_id("corr")


def turn_id() -> str:
    return new_id("turn")
