"""The studio page in a real headless Chromium after bulk writes: a list the service answered before
reading every change says "still catching up on N changes", asks again by itself, and the line
goes once every row is read; the agents page says the same of its counts."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from helpers.browser import CHROMIUM, axe_violations, expect
from helpers.paths import ROOT
from helpers.skips import skip_unless_present
from helpers.studio_page import A, rows, signed_in

from knowledge.curation.studio import Studio

PAGE = ROOT / "studio_web" / "dist" / "index.html"
pytestmark = skip_unless_present({"Debian's chromium": Path(CHROMIUM).exists(),
                                  "the built page (./run builds it with npm)": PAGE.exists()})


@pytest.fixture(autouse=True)
def one_chunk_of_two_per_request(monkeypatch):
    """A studio container whose budget is spent after reading two concepts: the demo agent's seven,
    with no snapshot yet, take four answers to read."""
    monkeypatch.setitem(Studio.__init__.__kwdefaults__, "catch_up_seconds", 0.0)
    monkeypatch.setitem(Studio.__init__.__kwdefaults__, "fetch_chunk", 2)


def test_a_list_answered_partial_says_it_is_catching_up_and_catches_up_by_itself(browser, studio, request):
    with signed_in(browser, studio, request, ready="#concepts tbody tr") as page:
        line = page.locator("#catching-up")
        expect(line).to_be_visible()
        expect(line).to_have_text(re.compile(r"^Still catching up on \d changes?: some rows may be behind"))
        assert axe_violations(page) == []
        expect(line).to_be_hidden(timeout=20_000)
        expect(page.locator("#concepts tbody tr")).to_have_count(7)
        assert len(rows(page)) == 7
        expect(page.locator("#status")).to_have_text("7 concepts")  # the count said once every row is read


def test_the_agents_page_says_its_counts_are_catching_up(browser, studio, request):
    with signed_in(browser, studio, request, path="/studio/knowledge", ready="#agents tbody tr") as page:
        line = page.locator("#agents-catching-up")
        expect(line).to_have_text(re.compile(r"^Still catching up on \d changes?: the counts may be behind\.$"))
        for _ in range(3):  # each answer reads two more of the seven
            page.reload()
            page.wait_for_selector("#agents tbody tr")
        expect(line).to_be_hidden()
        assert page.locator("#agents tbody tr").first.inner_text().split("\t")[:2] == [A, "7"]
