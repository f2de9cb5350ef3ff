"""``manage.py createadmin``: the first admin in one step, and nothing half-made on bad input."""

from __future__ import annotations

import httpx


def test_createadmin_makes_an_admin_who_can_log_in_and_refuses_a_taken_name_or_an_empty_password(room):
    made = room.manage("createadmin", "--username", "grace", "--password-stdin", input="a long enough secret\n")
    assert "Admin 'grace' created" in made.stdout

    again = room.manage("createadmin", "--username", "grace", "--password-stdin", input="other\n", check=False)
    assert again.returncode != 0
    assert "already exists" in again.stderr

    empty = room.manage("createadmin", "--username", "nobody", "--password-stdin", input="\n", check=False)
    assert empty.returncode != 0
    assert "empty password" in empty.stderr

    with httpx.Client(base_url=room.url("")) as client:
        login_page = client.get("/admin/login/")
        token = client.cookies["csrftoken"]
        answer = client.post(
            "/admin/login/?next=/admin/",
            data={
                "username": "grace",
                "password": "a long enough secret",
                "csrfmiddlewaretoken": token,
                "next": "/admin/",
            },
            headers={"Origin": room.url("").rstrip("/")},
        )
        assert "No account yet?" in login_page.text
        assert answer.status_code == 302 and answer.headers["location"] == "/admin/"
        assert client.get("/admin/").status_code == 200
