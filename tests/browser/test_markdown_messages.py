"""Messages are Markdown, rendered safely (D28).

Everything goes through the real composer and the fake agents' real replies (an echo streams the
message back as deltas, then as the final reply), so both the live and the final rendering are
exercised; hostile text must stay visible as text and run nothing.
"""

from __future__ import annotations

import re

from playwright.sync_api import expect

from tests.browser.room_page import address, bubbles, expect_final, reply, say, user_message

PLAN = """Plan for the fix

## Steps
1. Read *auth/session.py*
2. Replace the **naive** datetime
3. ~~Guess~~ Run the tests

- [x] reproduce
- [ ] fix

| File | Change |
| :--- | ---: |
| session.py | 2 lines |
| tests.py | 14 lines |

> Make it work, then make it right."""

CODE = "def expires(now):\n    return now + timedelta(hours=12)"

HOSTILE = """Hostile text follows.
<script>window.__pwned = "script"</script>
<img src=x onerror="window.__pwned = 'img'">
<svg onload="window.__pwned = 'svg'"><circle r="5"></circle></svg>
<iframe src="javascript:window.__pwned = 'iframe'"></iframe>
<a href="javascript:window.__pwned = 'a'" onclick="window.__pwned = 'click'">html link</a>
<div onmouseover="window.__pwned = 'hover'" style="position:fixed;inset:0">hover me</div>
<details open ontoggle="window.__pwned = 'toggle'"><summary>open</summary></details>

[markdown link](javascript:window.__pwned='md')
[data link](data:text/html;base64,PHNjcmlwdD53aW5kb3cuX19wd25lZD0nZGF0YSc8L3NjcmlwdD4=)
[vbscript link](vbscript:msgbox(1))
![tracker](https://tracker.example/pixel.png)
![inline svg](data:image/svg+xml;base64,PHN2ZyBvbmxvYWQ9ImFsZXJ0KDEpIi8+)
<https://example.com/safe> and <mailto:someone@example.com>"""

UNSAFE_ELEMENTS = "script, img, svg, iframe, object, embed, form, input, style, details, video, audio, link, meta, base"


def test_markdown_renders_a_heading_lists_a_table_emphasis_and_a_quote(room, open_page):
    page = open_page(room)
    address(page, "Kimi")

    say(page, PLAN)

    answer = reply(page, "agent:kimi", "echo: Plan for the fix")
    expect_final(answer)
    for body in (user_message(page, "Plan for the fix").locator(".msg-body"), answer.locator(".msg-body")):
        expect(body.locator("h2")).to_have_text("Steps")
        expect(body.locator("ol > li")).to_have_count(3)
        expect(body.locator("ol > li").nth(0).locator("em")).to_have_text("auth/session.py")
        expect(body.locator("ol > li").nth(1).locator("strong")).to_have_text("naive")
        expect(body.locator("ol > li").nth(2).locator("del")).to_have_text("Guess")
        expect(body.locator("ul > li")).to_have_text(["☑ reproduce", "☐ fix"])
        expect(body.locator("table th")).to_have_text(["File", "Change"])
        expect(body.locator("table tbody tr")).to_have_count(2)
        expect(body.locator("table tbody tr").nth(1).locator("td")).to_have_text(["tests.py", "14 lines"])
        expect(body.locator("table tbody td").nth(1)).to_have_attribute("align", "right")  # from "---:"
        expect(body.locator("blockquote")).to_have_text("Make it work, then make it right.")
        # Nothing is left as raw Markdown symbols.
        expect(body).not_to_contain_text("##")
        expect(body).not_to_contain_text("**")
        expect(body).not_to_contain_text("| :---")


def test_a_code_block_is_highlighted_and_its_copy_button_copies_the_code(room, open_page):
    page = open_page(room)
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=room.url(""))
    address(page, "Kimi")

    say(page, f"Try this:\n```python\n{CODE}\n```")

    answer = reply(page, "agent:kimi", "echo: Try this:")
    expect_final(answer)
    block = answer.locator(".code-block")
    expect(block).to_have_attribute("data-lang", "python")
    expect(block.locator(".code-lang")).to_have_text("python")
    expect(block.locator("pre code")).to_have_text(CODE)
    expect(block.locator("code .hljs-keyword").first).to_have_text("def")
    expect(block.locator("code .hljs-title")).to_have_text("expires")

    copy = block.get_by_role("button", name="Copy the code")
    copy.click()

    expect(copy).to_have_attribute("data-state", "copied")
    expect(copy).to_have_text("Copied")
    assert page.evaluate("navigator.clipboard.readText()") == CODE
    page.get_by_label("Message", exact=True).focus()  # moving on resets the button
    expect(copy).to_have_text("Copy")


def test_a_reply_is_rendered_as_markdown_while_it_streams(room, open_page):
    page = open_page(room)
    address(page, "Kimi")

    say(page, 'stream a list [[fake: stream n=4 delay_ms=20 text="Working:\\n\\n- one\\n- **two**\\n"; silent]]')

    live = page.locator('article.msg--turn.is-live[data-actor-id="agent:kimi"]')
    expect(live.locator(".stream-text li")).to_have_text(["one", "two"])
    expect(live.locator(".stream-text strong")).to_have_text("two")
    live.get_by_role("button", name="Stop Kimi's Turn").click()

    ended = bubbles(page, "agent:kimi")
    expect(ended).to_have_attribute("data-status", "cancelled")
    expect(ended.locator(".stream-text li")).to_have_text(["one", "two"])  # what streamed stays drawn


def test_hostile_html_and_markdown_stay_visible_as_text_and_run_nothing(room, open_page):
    page = open_page(room)
    dialogs = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    popups = []
    page.context.on("page", lambda popup: popups.append(popup.url))
    address(page, "Kimi")

    say(page, HOSTILE)

    mine = user_message(page, "Hostile text follows.")
    answer = reply(page, "agent:kimi", "echo: Hostile text follows.")
    expect_final(answer)  # the echo went through the live (streamed) rendering first
    for message in (mine, answer):
        body = message.locator(".msg-body")
        # The markup is shown as the text it is.
        expect(body).to_contain_text('<script>window.__pwned = "script"</script>')
        expect(body).to_contain_text("<img src=x onerror=")
        expect(body).to_contain_text("<svg onload=")
        expect(body).to_contain_text("<iframe src=")
        # Markdown links to refused schemes keep their words and lose their URL.
        for words in ("markdown link", "data link", "vbscript link"):
            dead = body.locator("a", has_text=words)
            expect(dead).to_have_count(1)
            assert dead.get_attribute("href") is None
        # Images are links to open, never loaded.
        expect(body.locator("a.md-image", has_text="tracker")).to_have_attribute(
            "href", "https://tracker.example/pixel.png"
        )
        assert body.locator("a.md-image", has_text="inline svg").get_attribute("href") is None
        safe = body.locator('a[href="https://example.com/safe"]')
        expect(safe).to_have_attribute("rel", "noopener noreferrer")
        expect(safe).to_have_attribute("target", "_blank")
        expect(body.locator('a[href="mailto:someone@example.com"]')).to_have_count(1)
        body.locator("a", has_text="markdown link").click()
        body.get_by_text("hover me").hover()

    timeline = page.locator("#timeline")
    expect(timeline.locator(UNSAFE_ELEMENTS)).to_have_count(0)
    hrefs = timeline.locator(".msg-body a[href]").evaluate_all("links => links.map(a => a.getAttribute('href'))")
    assert hrefs and all(re.match(r"^(https?:|mailto:)", href) for href in hrefs), hrefs
    attributes = timeline.locator(".msg-body").evaluate_all(
        "bodies => bodies.flatMap(body => [...body.querySelectorAll('*')])"
        ".flatMap(el => [...el.attributes].map(a => a.name))"
    )
    assert not [name for name in attributes if name.startswith("on") or name in ("style", "src", "srcdoc")]
    assert page.evaluate("window.__pwned") is None
    assert dialogs == [] and popups == []
    assert page.url.startswith(room.url("/"))
