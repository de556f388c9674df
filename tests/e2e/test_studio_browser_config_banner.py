"""The studio page in a real headless Chromium says loudly when an agent's knowledge.yaml does not parse
(its retrieval and learning are off), on the list and on the agents page, with the line and what to do,
and the notice goes once the file is fixed, whoever wrote it (here a raw S3 write, as `aws s3 cp`)."""

from __future__ import annotations

import json
from pathlib import Path

from helpers.browser import CHROMIUM, expect
from helpers.paths import ARTIFACTS, DEMO, ROOT
from helpers.skips import skip_unless_present
from helpers.studio_page import A, T

from knowledge.store.keys import config_key

PAGE = ROOT / "studio_web" / "dist" / "index.html"
pytestmark = skip_unless_present({"Debian's chromium": Path(CHROMIUM).exists(),
                                  "the built page (./run builds it with npm)": PAGE.exists()})
BROKEN = "knowledge:\n  retrieve: true\n  max_concepts: [\n"


def copy_in(s3, bucket, text):
    """A write as `aws s3 cp` makes it: no journal entry, no validation."""
    s3.put_object(Bucket=bucket, Key=config_key(T, A), Body=text.encode())


def quick_page(browser, studio, path):
    """A signed-in page whose list looks for changes every 0.3 s (config.json) instead of 30."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})

    def quicker(route):
        answer = route.fetch()
        route.fulfill(response=answer, body=json.dumps({**answer.json(), "refreshSeconds": 0.3}))

    context.route("**/config.json", quicker)
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(studio.url + path)
    page.click("#signin-link")
    return context, page, errors


def test_an_invalid_knowledge_yaml_is_said_loudly_with_its_line_and_goes_once_fixed(browser, studio, s3, bucket,
                                                                                  request):
    copy_in(s3, bucket, BROKEN)
    context, page, errors = quick_page(browser, studio, f"/studio/knowledge?agent={A}")
    try:
        banner = page.locator("#config-banner")
        expect(banner).to_be_visible()
        expect(banner).to_have_attribute("role", "alert")
        expect(banner).to_contain_text("Retrieval is off for this agent")
        expect(banner).to_contain_text("line 4")
        expect(banner).to_contain_text(f"correct line 4 of agents/{T}/{A}/knowledge.yaml")
        page.get_by_role("link", name="All agents").click()
        agents = page.locator("#agents-config-banner")
        expect(agents).to_be_visible()
        expect(agents).to_contain_text(f"{A} (line 4")
        expect(page.locator("#agents tbody tr", has_text=A)).to_contain_text("knowledge.yaml invalid")
        page.get_by_role("link", name=A, exact=True).click()
        expect(banner).to_be_visible()
        copy_in(s3, bucket, (DEMO / "knowledge.yaml").read_text())
        # The list updates itself; the API checks the file every 10 s.
        expect(banner).to_be_hidden(timeout=45_000)
        page.get_by_role("link", name="All agents").click()
        expect(page.locator("#agents tbody tr")).to_have_count(1)
        expect(page.locator("#agents-config-banner")).to_be_hidden()
    finally:
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"{request.node.name}.png"), full_page=True)
        context.close()
    assert errors == [], errors


def test_a_valid_or_empty_knowledge_yaml_shows_no_notice(browser, studio, s3, bucket, request):
    copy_in(s3, bucket, "")
    context, page, errors = quick_page(browser, studio, f"/studio/knowledge?agent={A}")
    try:
        page.wait_for_selector("#concepts tbody tr")
        expect(page.locator("#config-banner")).to_be_hidden()
    finally:
        context.close()
    assert errors == [], errors
