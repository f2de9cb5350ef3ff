"""The protocol's error response, which the API's handlers and the middleware answer with. (Bodies
are read by ninja through the bounded parser: ``groupx_site/api.py``, docs/DECISIONS.md D34.)"""

from __future__ import annotations

from django.http import HttpResponse

from groupx_site.core.errors import GroupXError
from groupx_site.core.json_response import json_response


def error_response(error: GroupXError, **headers: str) -> HttpResponse:
    response = json_response(error.as_body(), error.status)
    for name, value in {**error.headers, **headers}.items():
        response[name] = value
    return response
