"""The whole history over HTTP (D27): older pages by seq, message search, Markdown export and
``manage.py export_room``, against a real server whose log was seeded straight into SQLite."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest

from tests.history_seed import indexed_through, message, numbered, seed_messages
from tests.server import wait_until


def walk_back(server, limit: int) -> list[list[dict]]:
    """Every page from the newest back to the first event, following previousPage."""
    pages, params = [], {"limit": limit}
    while True:
        response = server.get("/api/events/page", params=params)
        assert response.status_code == 200, response.text
        body = response.json()
        pages.append(body["events"])
        if "previousPage" not in body:
            return pages
        params = {"limit": limit, "beforeSeq": body["previousPage"]["beforeSeq"]}


def test_pages_walk_back_through_the_whole_log_in_seq_order_without_gaps_or_repeats(make_server):
    server = make_server()
    seed_messages(server, numbered(1_234))
    head = server.get("/api/bootstrap").json()["room"]["throughSeq"]

    pages = walk_back(server, 500)

    assert [len(p) for p in pages[:-1]] == [500] * (len(pages) - 1)
    for events in pages:
        assert [e["seq"] for e in events] == sorted(e["seq"] for e in events)  # each page in seq order
    seqs = [e["seq"] for events in reversed(pages) for e in events]
    assert seqs == list(range(1, head + 1))
    assert pages[-1][0]["seq"] == 1


def test_a_page_holds_the_same_envelopes_as_bootstrap_and_the_stream(make_server):
    server = make_server()
    seed_messages(server, numbered(150))
    snapshot = server.get("/api/bootstrap").json()

    newest = server.get("/api/events/page", params={"limit": 100}).json()
    older = server.get("/api/events/page", params={"beforeSeq": snapshot["previousPage"]["beforeSeq"], "limit": 5})

    assert newest["events"] == snapshot["recentEvents"]
    assert newest["previousPage"] == snapshot["previousPage"]
    assert [e["seq"] for e in older.json()["events"]] == list(
        range(snapshot["previousPage"]["beforeSeq"] - 5, snapshot["previousPage"]["beforeSeq"])
    )
    assert older.json()["events"][0]["durability"] == "durable"


@pytest.mark.parametrize(
    "params",
    [
        {"limit": "501"},
        {"limit": "0"},
        {"limit": "-1"},
        {"limit": "ten"},
        {"beforeSeq": "0"},
        {"beforeSeq": "x"},
    ],
)
def test_a_page_limit_or_cursor_out_of_bounds_is_an_invalid_envelope(room, params):
    response = room.get("/api/events/page", params=params)

    assert response.status_code == 400
    assert response.json()["error"]["code"] == "INVALID_ENVELOPE"
    assert next(iter(params)) in response.json()["error"]["message"]


def test_the_largest_page_is_500_events(make_server):
    server = make_server()
    seed_messages(server, numbered(600))

    body = server.get("/api/events/page", params={"limit": "500"}).json()

    assert len(body["events"]) == 500


def test_search_finds_an_old_message_by_a_word_whoever_wrote_it(make_server):
    server = make_server()
    old = [
        message("the quarterly Zebra migration plan", author="kimi"),
        message("a system note about zebras", author="system"),
    ]
    seed_messages(server, old + numbered(1_000))
    accepted = server.post(
        "/api/messages",
        {"clientCommandId": str(uuid.uuid4()), "to": ["agent:sleeper"], "content": "one more zebra, posted live"},
    ).json()

    found = server.get("/api/search", params={"q": "ZEBRA"}).json()

    assert [i["eventId"] for i in found["items"]] == [
        accepted["messageEventId"],
        old[1]["event_id"],
        old[0]["event_id"],
    ]
    oldest = found["items"][-1]
    assert oldest["author"] == {"actorId": "agent:kimi", "kind": "agent", "displayName": "Kimi"}
    assert oldest["snippet"] == "the quarterly Zebra migration plan"
    assert oldest["seq"] < found["items"][0]["seq"]
    assert found["items"][0]["author"]["actorId"] == "user:web"


def test_search_finds_a_message_at_once_and_the_same_after_the_room_has_indexed_it_by_itself(make_server):
    server = make_server()
    seed_messages(server, [message("a walrus in the Österreich backlog")] + numbered(50))
    accepted = server.post(
        "/api/messages",
        {
            "clientCommandId": str(uuid.uuid4()),
            "to": ["agent:sleeper"],
            "content": "a Walrus from ÖSTERREICH, posted live",
        },
    ).json()

    at_once = server.get("/api/search", params={"q": "walrus österreich"}).json()["items"]
    head = server.get("/api/events/page", params={"limit": 1}).json()["events"][-1]["seq"]
    if indexed_through(server) is not None:  # SQLite: the room's indexer takes them in its next batch
        wait_until(lambda: indexed_through(server) >= head, timeout=30, message="the search index's next batch")
    indexed = server.get("/api/search", params={"q": "walrus österreich"}).json()["items"]

    assert [i["snippet"] for i in at_once] == [
        "a Walrus from ÖSTERREICH, posted live",
        "a walrus in the Österreich backlog",
    ]
    assert indexed == at_once and at_once[0]["eventId"] == accepted["messageEventId"]


def test_search_pages_newest_first_and_matches_every_word(make_server):
    server = make_server()
    seed_messages(server, numbered(30, text="apple {i}") + [message("apple and pear")])

    first = server.get("/api/search", params={"q": "apple", "limit": 20}).json()
    second = server.get("/api/search", params={"q": "apple", "limit": 20, **first["nextPage"]}).json()
    both = server.get("/api/search", params={"q": "pear apple"}).json()
    short = server.get("/api/search", params={"q": "e 7"}).json()  # shorter than a trigram: LIKE

    seqs = [i["seq"] for i in first["items"] + second["items"]]
    assert len(seqs) == 31 and seqs == sorted(seqs, reverse=True)
    assert "nextPage" not in second
    assert [i["snippet"] for i in both["items"]] == ["apple and pear"]
    assert {i["snippet"] for i in short["items"]} == {"apple 7", "apple 17", "apple 27"}


@pytest.mark.parametrize("params", [{}, {"q": "   "}, {"q": "x" * 1025}, {"q": "ok", "limit": "501"}])
def test_a_search_without_words_or_with_a_bad_limit_is_an_invalid_envelope(room, params):
    response = room.get("/api/search", params=params)

    assert response.status_code == 400
    assert response.json()["error"]["code"] == "INVALID_ENVELOPE"


def test_search_syntax_in_the_query_is_only_text(room):
    response = room.get("/api/search", params={"q": 'NEAR( "a" OR * content:'})

    assert response.status_code == 200
    assert response.json()["items"] == []


# Found by the schema-driven fuzzer (tests/test_openapi_contract.py): FTS5 reads a NUL as the end
# of the query text, so a quoted term holding one was "unterminated string", a 500.
@pytest.mark.parametrize("path, name", [("/api/search", "q"), ("/api/memory", "query")])
def test_a_search_term_holding_a_nul_character_is_only_text(room, path, name):
    response = room.get(path, params={name: "ab\x00cdef"})

    assert response.status_code == 200
    assert response.json()["items"] == []


DAY = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def seed_three_days(server) -> list[dict]:
    first = message("Monday: we agreed on **SQLite**", at=DAY)
    messages = [
        first,
        message(
            "Tuesday: Kimi wrote the migration", author="kimi", at=DAY + timedelta(days=1), reply_to=first["event_id"]
        ),
        message("Tuesday afternoon: tests pass", at=DAY + timedelta(days=1, hours=5)),
        message("Wednesday: shipped", at=DAY + timedelta(days=2)),
    ]
    seed_messages(server, messages)
    return messages


def test_the_export_downloads_a_time_range_as_markdown_in_seq_order(make_server):
    server = make_server()
    seed_three_days(server)

    response = server.get("/api/export.md", params={"from": "2026-03-03", "to": "2026-03-04T00:00:00Z"})

    assert response.status_code == 200
    assert response.headers["content-type"] == "text/markdown; charset=utf-8"
    assert response.headers["content-disposition"].startswith('attachment; filename="groupx-room-main-')
    text = response.text
    assert "### You · 2026-03-02" not in text  # Monday is only quoted by the reply
    assert "Wednesday" not in text
    assert text.index("### Kimi · 2026-03-03 09:00:00 UTC") < text.index("### You · 2026-03-03 14:00:00 UTC")
    assert "> Reply to **You** (2026-03-02 09:00:00 UTC): Monday: we agreed on **SQLite**" in text
    assert "Tuesday: Kimi wrote the migration" in text and "Tuesday afternoon: tests pass" in text


def test_the_whole_room_exports_in_pages_and_an_empty_range_says_so(make_server):
    server = make_server()
    seed_messages(server, numbered(1_100))

    whole = server.get("/api/export.md").text
    empty = server.get("/api/export.md", params={"from": "1999-01-01", "to": "1999-01-02"}).text

    positions = [whole.index(f"history line {i}\n") for i in (0, 499, 500, 1_000, 1_099)]
    assert positions == sorted(positions)
    assert whole.count("\n### ") == 1_100
    assert "No messages in this range" in empty


@pytest.mark.parametrize(
    "params", [{"from": "yesterday"}, {"to": "2026-13-01"}, {"from": "2026-03-03", "to": "2026-03-02"}]
)
def test_an_export_range_that_is_not_iso_or_is_backwards_is_an_invalid_envelope(room, params):
    response = room.get("/api/export.md", params=params)

    assert response.status_code == 400
    assert response.json()["error"]["code"] == "INVALID_ENVELOPE"


def test_export_room_writes_the_same_markdown_as_the_download(make_server, tmp_path):
    server = make_server()
    seed_three_days(server)
    output = tmp_path / "room.md"

    server.manage("export_room", "--from", "2026-03-03", "--to", "2026-03-04", "--output", str(output))
    printed = server.manage("export_room", "--from", "2026-03-03T00:00:00+00:00").stdout
    downloaded = server.get("/api/export.md", params={"from": "2026-03-03", "to": "2026-03-04"}).text

    def body(text: str) -> str:  # everything below the header (which says when it was exported)
        return text.split("\n---\n", 1)[1]

    assert body(output.read_text()) == body(downloaded)
    assert "Tuesday afternoon: tests pass" in printed and "Wednesday: shipped" in printed
    assert "### You · 2026-03-02" not in printed


def test_export_room_refuses_a_date_it_cannot_read(make_server):
    server = make_server()

    result = server.manage("export_room", "--from", "last week", check=False)

    assert result.returncode != 0
    assert "from must be an ISO 8601 date" in result.stderr


def test_the_history_endpoints_are_documented_in_the_api(room):
    paths = room.get("/api/openapi.json").json()["paths"]

    for path in ("/api/events/page", "/api/search", "/api/export.md"):
        assert paths[path]["get"]["summary"], path
    names = {p["name"] for p in paths["/api/export.md"]["get"]["parameters"]}
    assert {"from", "to"} <= names


def test_forward_pages_read_from_the_beginning_of_the_room_to_its_newest_event(make_server):
    server = make_server()
    seed_messages(server, numbered(250))
    head = server.get("/api/bootstrap").json()["room"]["throughSeq"]

    first = server.get("/api/events/page", params={"afterSeq": 0, "limit": 200}).json()
    rest = server.get("/api/events/page", params={"afterSeq": first["nextPage"]["afterSeq"], "limit": 200}).json()

    assert [e["seq"] for e in first["events"]] == list(range(1, 201))
    assert "previousPage" not in first
    assert [e["seq"] for e in rest["events"]] == list(range(201, head + 1))
    assert "nextPage" not in rest
    assert rest["previousPage"] == {"beforeSeq": 201}
    bounded = server.get("/api/events/page", params={"afterSeq": 10, "beforeSeq": 14}).json()
    assert [e["seq"] for e in bounded["events"]] == [11, 12, 13]


def test_a_page_from_a_date_starts_at_the_first_event_of_that_moment(make_server):
    server = make_server()
    start = datetime(2027, 3, 1, tzinfo=UTC)  # after the server's own start-up events, as seq is
    seed_messages(server, [message(f"hour {i}", at=start + timedelta(hours=i)) for i in range(48)])

    page = server.get("/api/events/page", params={"from": "2027-03-02", "limit": 5}).json()
    late = server.get("/api/events/page", params={"from": "2027-03-01T22:30:00+01:00", "limit": 1}).json()

    assert [e["body"]["content"] for e in page["events"]] == [f"hour {i}" for i in range(24, 29)]
    assert page["previousPage"] == {"beforeSeq": page["events"][0]["seq"]}
    assert page["nextPage"] == {"afterSeq": page["events"][-1]["seq"]}
    assert [e["body"]["content"] for e in late["events"]] == ["hour 22"]


@pytest.mark.parametrize(
    "params",
    [
        {"from": "yesterday"},
        {"afterSeq": "-1"},
        {"afterSeq": "x"},
        {"afterSeq": "1", "beforeSeq": "0"},
    ],
)
def test_a_forward_page_with_a_bad_cursor_or_date_is_an_invalid_envelope(room, params):
    response = room.get("/api/events/page", params=params)

    assert response.status_code == 400
    assert response.json()["error"]["code"] == "INVALID_ENVELOPE"


def test_pages_and_bootstrap_carry_an_excerpt_of_an_older_message_that_is_replied_to(make_server):
    server = make_server()
    old = message("the original question about the parser " + "x" * 400)
    answer = message("an answer, much later", author="kimi", reply_to=old["event_id"])
    seed_messages(server, [old] + numbered(150) + [answer])

    snapshot = server.get("/api/bootstrap").json()
    page = server.get("/api/events/page", params={"limit": 10}).json()
    whole = server.get("/api/events/page", params={"afterSeq": 0, "limit": 5}).json()

    for body in (snapshot, page):
        [quoted] = body["referencedMessages"]
        assert quoted["eventId"] == old["event_id"]
        assert quoted["actor"]["displayName"] == "You"
        assert quoted["excerpt"].startswith("the original question about the parser")
        assert len(quoted["excerpt"]) == 280 and quoted["excerpt"].endswith("…")
    assert "referencedMessages" not in whole  # the page replies to nothing outside itself
