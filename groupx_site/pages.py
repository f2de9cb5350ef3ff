"""The room page (the HTML shell; its data comes from ``/api/bootstrap`` and the stream)."""

from __future__ import annotations

import functools
from pathlib import Path

from django.contrib.auth import get_user_model
from django.contrib.staticfiles import finders
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.cache import cache_control
from django.views.decorators.http import etag
from django.views.i18n import JavaScriptCatalog

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


# The compiled catalogs change only with a release: the pages' scripts revalidate their strings on
# every load (no-cache) and get a 304 while the catalogs are the same. The tag names the language,
# so a 304 is never the other language's catalog (the answer also varies on the language cookie and
# Accept-Language, groupx_site/middleware.py).
CATALOGS_VERSION = int(
    max((path.stat().st_mtime for path in (Path(__file__).parent / "locale").glob("*/LC_MESSAGES/*.mo")), default=0)
)
javascript_catalog = cache_control(no_cache=True)(
    etag(lambda request: f"{request.LANGUAGE_CODE}-{CATALOGS_VERSION}")(
        JavaScriptCatalog.as_view(packages=["groupx_site"])
    )
)
