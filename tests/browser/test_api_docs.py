"""``/api/docs`` in Chromium (docs/DECISIONS.md D35): django-ninja's packaged Swagger UI, served from
the project's own static files under the page CSP, renders every route and the contract's schemas
without reaching anything but this server."""

from __future__ import annotations

from playwright.sync_api import expect


def test_the_api_docs_render_every_route_and_schema_offline_under_the_csp(browser, make_server):
    server = make_server()
    document = server.get("/api/openapi.json").json()
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    elsewhere, refused = [], []
    page.on("request", lambda request: not request.url.startswith(server.base_url) and elsewhere.append(request.url))
    page.on("console", lambda message: "Content Security Policy" in message.text and refused.append(message.text))
    page.on("pageerror", lambda error: refused.append(str(error)))

    page.goto(server.url("/api/docs"))

    for path, methods in document["paths"].items():
        summaries = page.locator(f'.opblock-summary-path[data-path="{path}"]')
        expect(summaries).to_have_count(len(methods))
    expect(page.locator(".opblock")).to_have_count(sum(len(methods) for methods in document["paths"].values()))
    schemas = page.locator("section.models")
    for name in ("PostMessageBody", "PostMessageAccepted", "ErrorBody", "Envelope", "MemoryWriteBody"):
        expect(schemas.get_by_role("button", name=name, exact=True)).to_be_visible()

    page.locator('.opblock-post .opblock-summary-path[data-path="/api/messages"]').click()
    operation = page.locator(".opblock.is-open")
    expect(operation.locator(".opblock-section-request-body")).to_contain_text("clientCommandId")
    expect(operation.locator(".response-col_status", has_text="413")).to_be_visible()
    expect(operation.locator(".responses-table")).to_contain_text("MESSAGE_TOO_LARGE")
    expect(operation.locator(".responses-table")).to_contain_text("SENDER_FIELD_FORBIDDEN")

    assert elsewhere == []
    assert refused == []
    context.close()
