"""The agent memory drawer: core memory (add, replace, retract) and dated memory by day (FEATURES §15.2-3)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.agents import fake_agents, send, wait_terminal
from tests.server import wait_until


def kimi_memory(server, memory_type: str, status: str | None = "active") -> list[dict]:
    params = {"scopeType": "agent", "scopeId": "agent:kimi", "agentMemoryType": memory_type, "includeHistory": "true"}
    items = server.get("/api/memory", params=params).json()["items"]
    return [m for m in items if status is None or m["status"] == status]


@pytest.fixture
def rollup_room(make_server, tmp_path, monkeypatch):
    """Kimi writes its dated memory as soon as one big Turn fills a batch (checked every 100 ms)."""
    monkeypatch.setenv("GROUPX_DATED_MEMORY_QUIET_MS", "0")
    monkeypatch.setenv("GROUPX_MEMORY_TICK_MS", "100")
    return make_server(
        fake_agents(
            tmp_path,
            "kimi",
            "hermes",
            scenarios={"kimi": {"default_turn": ['reply text="Fixed the <b>login</b> test; USE_TZ was the cause."']}},
        )
    )


def test_core_memory_is_kept_per_agent_and_dated_memory_is_grouped_by_day(rollup_room, open_page):
    server = rollup_room
    # One completed Turn of ≥ 16,000 characters is a full batch: the rollup writes one dated note.
    turn = send(server, "agent:kimi", "[[fake: reply text=done]] please look " + "x" * 16_000)["turns"][0]
    assert wait_terminal(server, turn["turnId"])["type"] == "turn.completed"
    [note] = wait_until(lambda: kimi_memory(server, "dated"), timeout=30, message="Kimi's dated memory")

    page = open_page(server)
    opener = page.get_by_role("button", name="Kimi's memory")
    opener.click()

    drawer = page.locator("#agent-memory")
    expect(drawer).to_be_visible()
    expect(drawer.get_by_role("heading", name="Kimi's memory")).to_be_focused()
    core = drawer.locator("#agent-core")
    dated = drawer.locator("#agent-dated")
    expect(core.locator(".mem-empty")).to_be_visible()

    # Dated: one day heading, the note as plain text, written by Kimi; retract only, no replace.
    expect(dated.locator(".mem-day")).to_have_count(1)
    expect(dated.locator(".mem-day")).not_to_be_empty()
    item = dated.locator(".mem-item")
    expect(item.locator(".mem-content")).to_have_text("Fixed the <b>login</b> test; USE_TZ was the cause.")
    expect(item.locator(".mem-content b")).to_have_count(0)
    expect(item.locator(".mem-author")).to_have_text("Kimi")
    expect(item.get_by_role("button", name="Replace this note")).to_have_count(0)
    expect(dated.locator("form")).to_have_count(0)  # nobody but Kimi writes dated memory

    # Core: add, then replace.
    core.get_by_label("New core memory for Kimi").fill("Prefer <i>small</i> diffs")
    core.get_by_label("Kind", exact=True).select_option("instruction")
    core.get_by_role("button", name="Remember").click()
    expect(core.locator(".mem-content")).to_have_text(["Prefer <i>small</i> diffs"])
    expect(core.locator(".mem-content i")).to_have_count(0)
    [stored] = kimi_memory(server, "core")
    assert stored["content"] == "Prefer <i>small</i> diffs" and stored["kind"] == "instruction"
    assert stored["scope"] == {"type": "agent", "id": "agent:kimi"} and stored["authorActorId"] == "user:web"

    core.get_by_role("button", name="Replace this instruction").click()
    core.get_by_label("New content").fill("Prefer small diffs and run the tests")
    core.get_by_role("button", name="Save").click()
    expect(core.locator(".mem-content")).to_have_text(["Prefer small diffs and run the tests"])
    assert [m["content"] for m in kimi_memory(server, "core")] == ["Prefer small diffs and run the tests"]

    # Retract the dated note, with the confirm step.
    item.get_by_role("button", name="Retract this note").click()
    item.get_by_role("button", name="Yes, retract").click()
    expect(dated.locator(".mem-item")).to_have_count(0)
    expect(dated.locator(".mem-day")).to_have_count(0)
    assert kimi_memory(server, "dated", status="retracted")[0]["memoryId"] == note["memoryId"]

    # Nothing leaked into the public panel; Escape closes the drawer and gives focus back.
    expect(page.locator("#memory-panel .mem-item")).to_have_count(0)
    page.keyboard.press("Escape")
    expect(drawer).to_be_hidden()
    expect(opener).to_be_focused()


def test_the_drawer_shows_another_agents_memory_when_reopened(room, open_page):
    page = open_page(room)
    page.get_by_role("button", name="Kimi's memory").click()
    drawer = page.locator("#agent-memory")
    drawer.get_by_label("New core memory for Kimi").fill("Kimi only")
    drawer.get_by_role("button", name="Remember").click()
    expect(drawer.locator("#agent-core .mem-content")).to_have_text(["Kimi only"])

    page.get_by_role("button", name="Grok's memory").click()

    expect(drawer.get_by_role("heading", name="Grok's memory")).to_be_visible()
    expect(drawer.locator("#agent-core .mem-empty")).to_be_visible()
    expect(drawer.locator("#agent-core .mem-item")).to_have_count(0)
    drawer.get_by_role("button", name="Close the agent memory").click()
    expect(drawer).to_be_hidden()
