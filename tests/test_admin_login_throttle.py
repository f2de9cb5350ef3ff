"""Log-in attempts to the Django admin are throttled (docs/DECISIONS.md D103): after a few tries
for one user name within a minute the next is answered 429 without being checked, on a real
server over real HTTP."""

from __future__ import annotations

import httpx

from tests.agents import csrf


def attempt(browser: httpx.Client, username: str) -> httpx.Response:
    form = browser.get("/admin/login/")
    return browser.post(
        "/admin/login/", data={"csrfmiddlewaretoken": csrf(form.text), "username": username, "password": "wrong"}
    )


def test_repeated_admin_log_in_attempts_for_one_name_are_refused_429(make_server):
    server = make_server()
    with httpx.Client(base_url=server.base_url, timeout=10) as browser:
        # The counts live in fixed one-minute windows: a window may end between two attempts, so the
        # 429 comes after 5 attempts in one window, or after at most 10 across two.
        tries = []
        while len(tries) < 11 and (not tries or tries[-1].status_code != 429):
            tries.append(attempt(browser, "op"))
        another_name = attempt(browser, "someone-else")

    *refused_forms, throttled = tries
    assert throttled.status_code == 429 and throttled.headers["Retry-After"] == "60"
    assert "Too many log-in attempts" in throttled.text
    assert len(refused_forms) >= 5
    assert all(t.status_code == 200 and "correct username and password" in t.text for t in refused_forms)
    assert another_name.status_code == 200
