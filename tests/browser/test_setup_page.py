"""Agent Settings (/setup) in a real browser: each agent's core and dated memory, where FEATURES
§15.2-3 place them beside the agent's settings (core memory added there reaches the store at once,
dated notes are shown by day and cannot be edited), and a save from a page older than the file
(D100). Waits are page conditions or deadlines, never sleeps."""

from __future__ import annotations

from playwright.sync_api import expect

from tests.agents import send, wait_terminal
from tests.browser import test_agent_memory
from tests.browser.test_agent_memory import kimi_memory
from tests.server import wait_until

rollup_room = test_agent_memory.rollup_room  # the drawer's room: Kimi writes a dated note after one big Turn


def test_setup_shows_each_agents_core_and_dated_memory_and_adds_core_memory(rollup_room, open_page):
    server = rollup_room
    turn = send(server, "agent:kimi", "[[fake: reply text=done]] please look " + "x" * 16_000)["turns"][0]
    assert wait_terminal(server, turn["turnId"])["type"] == "turn.completed"
    wait_until(lambda: kimi_memory(server, "dated"), timeout=30, message="Kimi's dated memory")

    page = open_page(server)
    page.goto(server.url("/setup"))
    section = page.locator("#agent-memory")
    expect(section.get_by_role("heading", name="Agent memory")).to_be_visible()
    expect(section.locator("summary")).to_have_text(["Kimi's memory", "Hermes's memory"])
    section.get_by_text("Kimi's memory").click()

    kimi = section.locator('details[data-actor-id="agent:kimi"]')
    expect(kimi.locator(".agent-dated .mem-content")).to_have_text("Fixed the <b>login</b> test; USE_TZ was the cause.")
    expect(kimi.locator(".agent-dated").get_by_role("button", name="Replace this note")).to_have_count(0)
    expect(kimi.locator(".agent-dated form")).to_have_count(0)  # nobody but Kimi writes dated memory
    expect(kimi.locator(".agent-core .mem-empty")).to_be_visible()

    kimi.get_by_label("New core memory for Kimi").fill("Prefer small diffs")
    kimi.get_by_role("button", name="Remember").click()

    expect(kimi.locator(".agent-core .mem-content")).to_have_text(["Prefer small diffs"])
    assert [m["content"] for m in kimi_memory(server, "core")] == ["Prefer small diffs"]


def test_a_save_from_a_page_older_than_the_file_is_refused_and_says_so(make_server, open_page):
    server = make_server()
    page = open_page(server)
    page.goto(server.url("/setup"))
    expect(page.locator("#setup-form")).to_be_visible(timeout=15_000)
    # Another page (or the assistant) saves first.
    current = server.get("/api/setup").json()
    assert (
        server.post(
            "/api/setup", {"config": {**current["config"], "serverPort": 4455}, "revision": current["revision"]}
        ).status_code
        == 200
    )
    newer = server.config_path.read_bytes()

    page.locator("#server-port").fill("4466")
    page.locator("#save").click()

    banner = page.locator("#banner")
    expect(banner).to_contain_text("groupx.json changed since this setup was read")
    expect(banner).to_contain_text("Nothing was saved.")
    expect(page.locator("#save")).to_be_enabled()
    assert server.config_path.read_bytes() == newer
