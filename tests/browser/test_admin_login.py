"""The Django admin works from a browser: the first admin is made in one step, the room says how
while there is none, and Chromium's login form passes Django's CSRF check (the admin's pages send
``Referrer-Policy: same-origin``; the room and the API keep ``no-referrer``)."""

from __future__ import annotations

import re
import uuid

from playwright.sync_api import expect

from tests.server import wait_until


def test_the_first_admin_logs_in_from_chromium_opens_a_turn_and_retracts_a_memory_item(room, open_page, browser):
    page = open_page(room)
    admin_link = page.locator(".topbar-right a.btn-ghost", has_text="Admin")
    expect(admin_link).to_have_attribute("title", re.compile("createadmin"))  # no admin yet: the hint

    login = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
    login.goto(room.url("/admin/login/"))
    expect(login.locator("#first-admin-hint")).to_contain_text("manage.py createadmin")
    made = room.manage("createadmin", "--username", "ada", "--password-stdin", input="correct horse battery\n")
    assert "created" in made.stdout

    # A Turn and a memory item to look at.
    sent = room.post("/api/messages", {"clientCommandId": str(uuid.uuid4()), "to": ["agent:kimi"], "content": "hi"})
    turn_id = sent.json()["turns"][0]["turnId"]
    memory = room.post(
        "/api/memory",
        {
            "clientCommandId": str(uuid.uuid4()),
            "scope": {"type": "room", "id": "room:main"},
            "kind": "fact",
            "content": "The staging DB is read-only",
        },
    )
    memory_id = memory.json()["memory"]["memoryId"]

    login.get_by_label("Username").fill("ada")
    login.get_by_label("Password").fill("correct horse battery")
    login.get_by_role("button", name="Log in").click()
    expect(login.get_by_role("heading", name=re.compile("Site administration"))).to_be_visible()

    login.goto(room.url("/admin/turns/turn/"))
    login.get_by_role("link", name=turn_id).click()
    expect(login.locator("body")).to_contain_text(turn_id)

    login.goto(room.url("/admin/memory/memoryrecord/"))
    login.get_by_role("row", name=re.compile(memory_id)).get_by_role("checkbox").check()
    login.get_by_label("Action:").select_option(label="Retract the selected records")
    login.get_by_role("button", name="Go").click()
    expect(login.locator(".messagelist")).to_contain_text("Retracted 1 record(s).")
    wait_until(
        lambda: room.get("/api/memory", params={"scopeType": "room", "scopeId": "room:main"}).json()["items"] == [],
        message="the retracted item to leave the room's memory",
    )

    page.reload()  # an admin exists now: the hint is gone
    expect(admin_link).not_to_have_attribute("title", re.compile("createadmin"))
    login.context.close()
