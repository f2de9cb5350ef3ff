"""/setup's per-CLI Test button in a real browser: it runs the CLI's ``--version`` and native
handshake through the server and shows the result; a CLI that is not found shows how it is
usually installed. Waits are page conditions, never sleeps."""

from __future__ import annotations

import os

from playwright.sync_api import expect

from tests.agents import fake_agents
from tests.server import FAKES_BIN, GroupXServer


def test_test_shows_the_version_and_handshake_and_a_missing_cli_shows_an_install_hint(tmp_path, open_page):
    path_dir = tmp_path / "path"
    path_dir.mkdir()
    (path_dir / "kimi").symlink_to(FAKES_BIN / "kimi")  # the one native CLI this machine "has"
    server = GroupXServer(
        tmp_path,
        {"agents": fake_agents(tmp_path, "kimi"), "timeouts": {"closeMs": 300}},
        env={"PATH": f"{path_dir}{os.pathsep}/usr/bin{os.pathsep}/bin"},
    )
    try:
        server.start()
        page = open_page(server)
        page.goto(server.url("/setup"))
        expect(page.locator("#setup-form")).to_be_visible(timeout=15_000)

        kimi = page.locator("#drivers li.found", has_text="kimi")
        kimi.get_by_role("button", name="Test kimi").click()
        result = kimi.get_by_role("status")
        expect(result).to_have_text("version kimi 0.0.0 (GroupX fake); handshake ok", timeout=30_000)
        expect(result).to_have_class("cli-result ok")

        page.get_by_text("Other agents (not found on PATH)").click()
        claude = page.locator("#missing-driver-list li", has_text="claude")
        expect(claude.locator(".install-hint")).to_have_text("Install: npm install -g @anthropic-ai/claude-code")
        expect(claude.get_by_role("button")).to_have_count(0)
    finally:
        server.stop()
