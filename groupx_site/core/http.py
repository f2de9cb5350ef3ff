"""HTTP helpers every app's views use: the bounded JSON body and the protocol's error response."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse

from groupx_site.core.bodies import parse_json_body
from groupx_site.core.errors import GroupXError
from groupx_site.core.json_response import json_response


def error_response(error: GroupXError, **headers: str) -> HttpResponse:
    response = json_response(error.as_body(), error.status)
    for name, value in {**error.headers, **headers}.items():
        response[name] = value
    return response


def json_body(request: HttpRequest) -> object:
    """The parsed JSON body, bounded in size, depth and text (``groupx_site/core/bodies.py``)."""
    return parse_json_body(request.body)
