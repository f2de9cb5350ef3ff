"""The room page (the HTML shell; its data comes from ``/api/bootstrap`` and the stream)."""

from __future__ import annotations

import functools
from pathlib import Path

from django.contrib.auth import get_user_model
from django.contrib.staticfiles import finders
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from groupx_site.runtime_identity import product_version
from setup_wizard.roster import configured_agents
from setup_wizard.starter import is_demo_roster

# Classic scripts of the room page (not ES modules): never module-preloaded.
CLASSIC_SCRIPTS = frozenset({"theme.js", "boot_fetch.js", "demo_banner.js"})


@functools.cache
def room_modules() -> tuple[str, ...]:
    """Every ES module of the room page, preloaded in parallel from the page's head instead of one
    import level after another (room.js imports ~40 of them)."""
    entry = finders.find("rooms/room.js")
    if not entry:
        return ()
    return tuple(
        f"rooms/{path.name}"
        for path in sorted(Path(entry).parent.glob("*.js"))
        if path.name not in CLASSIC_SCRIPTS and path.name != "room.js"
    )


def room_page(request: HttpRequest) -> HttpResponse:
    # Without an admin user the header's Admin link says how to make one (manage.py createadmin).
    has_admin = get_user_model().objects.filter(is_superuser=True, is_active=True).exists()
    return render(
        request,
        "rooms/room.html",
        {
            "demo_roster": is_demo_roster(configured_agents()),
            "room_modules": room_modules(),
            "has_admin": has_admin,
            "version": product_version(),
        },
    )
