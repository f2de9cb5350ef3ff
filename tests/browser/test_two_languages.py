"""The room and /setup in two languages (D123): a browser that asks for Chinese gets the pages,
their scripts' sentences and the server's in Simplified Chinese, with the right ``<html lang>``;
the page's language switch turns them English, and the choice holds after a reload. What people
and agents write is never translated. axe-core finds nothing serious on the Chinese pages."""

from __future__ import annotations

import uuid

import pytest
from playwright.sync_api import expect

from tests.agents import fake_agents
from tests.browser.axe import blocking_violations
from tests.server import GroupXServer


@pytest.fixture(scope="module")
def room(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("languages")
    server = GroupXServer(tmp, {"agents": fake_agents(tmp, "kimi"), "timeouts": {"closeMs": 300}})
    server.start()
    memory = {
        "clientCommandId": str(uuid.uuid4()),
        "kind": "fact",
        "content": "Deploys go out on Tuesdays",
        "scope": {"type": "room", "id": "room:main"},
    }
    assert server.post("/api/memory", memory).status_code == 201
    yield server
    server.stop()


@pytest.fixture
def chinese_page(browser):
    contexts = []

    def factory(server, path, *, width=1280, height=800):
        context = browser.new_context(locale="zh-CN", viewport={"width": width, "height": height})
        contexts.append(context)
        page = context.new_page()
        page.goto(server.url(path))
        return page

    yield factory
    for context in contexts:
        context.close()


def ready(page):
    page.wait_for_selector("body[data-ready=true]", state="attached", timeout=15_000)


def test_a_chinese_browser_sees_the_room_in_chinese_and_switching_to_english_holds_after_a_reload(room, chinese_page):
    page = chinese_page(room, "/")
    ready(page)

    expect(page.locator("html")).to_have_attribute("lang", "zh-hans")
    expect(page.get_by_role("heading", name="Agent", exact=True)).to_be_visible()
    expect(page.locator("#message-input")).to_have_attribute("placeholder", "给 Kimi 发消息…")
    expect(page.locator("#send")).to_have_text("发给 Kimi")
    expect(page.locator("#connection")).to_have_text("已连接")
    expect(page.locator("#agent-count")).to_have_text("1/1 就绪")
    line = page.locator('#durable .sys[data-type="memory.remembered"]')
    # The sentence is Chinese; what was remembered stays as it was written.
    expect(line).to_contain_text("你记住了一条公共事实：Deploys go out on Tuesdays")
    violations = blocking_violations(page)
    assert not violations, "\n".join(violations)

    switch = page.get_by_role("button", name="语言： English")
    switch.focus()
    page.keyboard.press("Enter")  # the switch works from the keyboard
    expect(page.locator("html")).to_have_attribute("lang", "en")
    ready(page)
    expect(page.get_by_role("heading", name="Agents", exact=True)).to_be_visible()
    expect(page.locator("#message-input")).to_have_attribute("placeholder", "Message Kimi…")
    expect(line).to_contain_text("You remembered a public fact: Deploys go out on Tuesdays")

    page.reload()
    ready(page)
    expect(page.locator("html")).to_have_attribute("lang", "en")
    expect(page.locator("#send")).to_have_text("Send to Kimi")
    expect(page.get_by_role("button", name="Language: 中文")).to_be_visible()


def test_a_chinese_browser_sees_setup_in_chinese_and_switching_to_english_holds_after_a_reload(room, chinese_page):
    page = chinese_page(room, "/setup")
    expect(page.locator("#setup-form")).to_be_visible(timeout=15_000)

    expect(page.locator("html")).to_have_attribute("lang", "zh-hans")
    expect(page.get_by_role("heading", level=1)).to_have_text("GroupX · Agent 设置")
    expect(page.get_by_role("heading", name="本机上的 Agent CLI")).to_be_visible()
    expect(page.locator("#intro")).to_contain_text("正在编辑")  # a sentence of the page's script
    expect(page.locator("#save")).to_have_text("保存")
    expect(page.get_by_role("link", name="返回房间")).to_be_visible()
    violations = blocking_violations(page)
    assert not violations, "\n".join(violations)

    page.get_by_role("button", name="语言： English").click()
    expect(page.locator("html")).to_have_attribute("lang", "en")
    expect(page.get_by_role("heading", level=1)).to_have_text("GroupX · Agent Settings")
    expect(page.locator("#intro")).to_contain_text("Editing")

    page.reload()
    expect(page.get_by_role("heading", level=1)).to_have_text("GroupX · Agent Settings")
    page.get_by_role("link", name="Back to the room").click()
    ready(page)
    expect(page.locator("html")).to_have_attribute("lang", "en")  # one choice for every page


def test_the_language_switch_fits_on_a_phone(room, chinese_page):
    page = chinese_page(room, "/", width=390, height=844)
    ready(page)

    switch = page.get_by_role("button", name="语言： English")
    expect(switch).to_be_visible()
    box = switch.bounding_box()
    assert box["x"] + box["width"] <= 390 and box["height"] >= 24
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
