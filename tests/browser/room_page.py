"""What a person does on the room page, as small helpers over Playwright locators."""

from __future__ import annotations

import json
import re

from playwright.sync_api import Locator, Page, expect

AGENTS = ("agent:grok", "agent:hermes", "agent:kimi")


def address(page: Page, *names: str) -> None:
    """Press the recipient chips so exactly ``names`` (display names, or "@all") are addressed."""
    everyone = page.get_by_role("button", name="@all", exact=True)
    if names == ("@all",):
        if everyone.get_attribute("aria-pressed") != "true":
            everyone.click()
        return
    if everyone.get_attribute("aria-pressed") == "true":
        everyone.click()  # now nobody is picked
    for chip in page.locator("#recipient-chips .recipient:not(.recipient--all)").all():
        wanted = chip.inner_text().removeprefix("@") in names
        if (chip.get_attribute("aria-pressed") == "true") != wanted:
            chip.click()


def say(page: Page, text: str) -> None:
    """Type a message and press Enter."""
    box = page.get_by_label("Message", exact=True)
    box.fill(text)
    box.press("Enter")


def user_message(page: Page, text: str) -> Locator:
    return page.locator("article.msg--user", has_text=text)


def bubbles(page: Page, actor_id: str) -> Locator:
    """An agent's Turn bubbles (live or final)."""
    return page.locator(f'article.msg--turn[data-actor-id="{actor_id}"]')


def reply(page: Page, actor_id: str, text: str) -> Locator:
    return bubbles(page, actor_id).filter(has=page.locator(".msg-body", has_text=text))


def expect_final(bubble: Locator, *, timeout: float = 20_000) -> None:
    """The bubble has become a reply message (it carries the reply's eventId, no live marker)."""
    expect(bubble).to_have_attribute("data-event-id", re.compile(r"^evt_"), timeout=timeout)
    expect(bubble).not_to_have_class(re.compile(r"\bis-live\b"))


def message_ids(page: Page) -> list[str]:
    """The eventIds of every message shown in the log, top to bottom."""
    return page.eval_on_selector_all("#durable article[data-event-id]", "els => els.map(e => e.dataset.eventId)")


def append_raw_events(server, events: list[tuple[str, dict]]) -> None:
    """Write durable events straight into the server's store from another process, as a future
    event type (or a forbidden one) would appear; the server's SSE tail polls them up within 2 s."""
    code = (
        "import json, uuid\n"
        "from django.utils import timezone\n"
        "from rooms.models import Event\n"
        f"rows = json.loads({json.dumps(json.dumps(events))})\n"
        "Event.objects.bulk_create([Event(event_id='evt_' + uuid.uuid4().hex, event_type=kind,"
        " actor_id='system:groupx', actor_kind='system', actor_display_name='GroupX', correlation_id='test',"
        " root_correlation_id='test', occurred_at=timezone.now(), body=body) for kind, body in rows])\n"
    )
    server.manage("shell", "-c", code)
