"""The reader's language over real HTTP (D123): the browser's Accept-Language chooses, the page's
switch (Django's language cookie) wins over it, the pages say which and vary on both, the server's
sentences follow it while codes stay codes, and the scripts' catalog is revalidated per language."""

from __future__ import annotations

import os

import pytest

from tests.agents import fake_agents
from tests.server import GroupXServer

CHINESE = {"Accept-Language": "zh-CN,zh;q=0.9,en;q=0.8"}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("languages")
    room = GroupXServer(
        workdir,
        {"agents": fake_agents(workdir, "kimi"), "timeouts": {"closeMs": 300}},
        env={"PATH": f"/usr/bin{os.pathsep}/bin"},  # no agent CLI of this machine: claude is not found
    )

    room.start()
    yield room
    room.stop()


def test_a_chinese_browser_gets_the_pages_in_chinese_and_they_say_so(server):
    room = server.get("/", headers=CHINESE)
    setup = server.get("/setup", headers=CHINESE)

    assert '<html lang="zh-hans">' in room.text and "发给：所有人" in room.text
    assert "<h1>GroupX · Agent 设置</h1>" in setup.text
    for page in (room, setup):
        assert page.headers["Content-Language"] == "zh-hans"
        assert {"accept-language", "cookie"} <= {v.strip().lower() for v in page.headers["Vary"].split(",")}


def test_the_language_cookie_wins_over_the_browser_and_english_is_the_default(server):
    chosen = server.get("/", headers=CHINESE, cookies={"django_language": "en"})
    plain = server.get("/")

    assert '<html lang="en">' in chosen.text and "To: everyone" in chosen.text
    assert '<html lang="en">' in plain.text and plain.headers["Content-Language"] == "en"


def test_the_servers_sentences_follow_the_language_and_codes_stay_codes(server):
    answer = server.post("/api/setup/test-cli", {"driver": "claude"}, headers=CHINESE)

    assert answer.status_code == 200, answer.text
    handshake = answer.json()["handshake"]
    assert handshake["code"] == "ADAPTER_NOT_FOUND"
    assert handshake["message"] == "在 PATH 上找不到该命令"
    english = server.post("/api/setup/test-cli", {"driver": "claude"}).json()["handshake"]
    assert english["message"] == "the command was not found on PATH"


def test_the_scripts_catalog_is_revalidated_and_a_304_is_never_the_other_languages(server):
    chinese = server.get("/jsi18n/", headers=CHINESE)

    assert chinese.status_code == 200 and chinese.headers["Cache-Control"] == "no-cache"
    assert '"Send to %(names)s"' in chinese.text and "\\u53d1\\u7ed9 %(names)s" in chinese.text  # 发给
    tag = chinese.headers["ETag"]
    assert server.get("/jsi18n/", headers={**CHINESE, "If-None-Match": tag}).status_code == 304
    english = server.get("/jsi18n/", headers={"If-None-Match": tag})
    assert english.status_code == 200 and "\\u53d1\\u7ed9" not in english.text
