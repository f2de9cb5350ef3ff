"""Static files through a real server: fingerprinted names cached for a year, everything else
revalidated (groupx_site/static_files.py, docs/DECISIONS.md D120)."""

from __future__ import annotations

import re

MODULE = re.compile(r'<script type="module" src="(/static/rooms/room\.([0-9a-f]{12})\.js)"></script>')
PRELOAD = re.compile(r'<link rel="modulepreload" href="(/static/rooms/[a-z_]+\.[0-9a-f]{12}\.js)">')


def test_the_room_page_loads_fingerprinted_files_that_are_cached_for_a_year(room):
    html = room.get("/").text
    entry = MODULE.search(html)
    assert entry, "room.js under its fingerprinted name"
    preloaded = PRELOAD.findall(html)
    assert len(preloaded) > 20
    styles = re.findall(r'<link rel="stylesheet" href="(/static/rooms/room\.[0-9a-f]{12}\.css)">', html)
    assert styles

    for url in [entry.group(1), *preloaded[:3], *styles]:
        response = room.get(url)
        assert response.status_code == 200, url
        assert response.headers["Cache-Control"] == "public, max-age=31536000, immutable"

    # Its imports name the fingerprinted modules too, the same URLs the page preloads.
    imports = set(re.findall(r'from "\./([a-z_]+\.[0-9a-f]{12}\.js)"', room.get(entry.group(1)).text))
    assert imports and {f"/static/rooms/{name}" for name in imports} <= set(preloaded)


def test_a_plain_static_name_is_still_served_and_revalidated_on_every_use(room):
    plain = room.get("/static/rooms/room.js")
    admin = room.get("/static/admin/css/base.css")

    assert plain.status_code == 200 and plain.headers["Cache-Control"] == "no-cache"
    assert 'from "./api.js"' in plain.text  # the source, not the rewritten copy
    assert admin.status_code == 200 and admin.headers["Cache-Control"] == "no-cache"
    assert room.get("/static/rooms/room.0123456789ab.js").status_code == 404
