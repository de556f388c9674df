"""The model's words in the studio page, in a real headless Chromium: a concept whose words wait for the
tenant's next daily model calls says "words pending" on its row and its page, and "Teach words…" says
what asking for the words of every concept without them would cost, then queues the batched jobs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.aws import drain, new_queue
from helpers.browser import CHROMIUM, axe_violations, expect
from helpers.paths import DEMO, ROOT
from helpers.skips import skip_unless_present
from helpers.studio_page import A, T, open_concept, signed_in

PAGE = ROOT / "studio_web" / "dist" / "index.html"
pytestmark = skip_unless_present({"Debian's chromium": Path(CHROMIUM).exists(),
                                  "the built page (./run builds it with npm)": PAGE.exists()})
WAITING = "troca-em-30-dias"
CONCEPTS = len(list(DEMO.glob("*.md")))


@pytest.fixture
def queue(monkeypatch, sqs):
    """The words jobs' queue, set before the studio's handler starts (its cold start reads it)."""
    url = new_queue(sqs)
    monkeypatch.setenv("POLICY_REVIEW_QUEUE_URL", url)
    return url


def test_a_concept_whose_words_wait_says_so_and_teach_words_queues_every_concept_without_them(
        queue, browser, studio, request, store, sqs):
    store.pending_words().put(T, A, [WAITING])
    with signed_in(browser, studio, request) as page:
        pending = page.locator("#concepts tbody tr", has=page.locator(".badge.pending"))
        expect(pending).to_have_count(1)
        assert pending.get_attribute("data-name") == WAITING
        expect(pending.locator(".badge.pending")).to_have_text("words pending")
        open_concept(page, WAITING)
        expect(page.locator("#words-pending-note")).to_be_visible()
        expect(page.locator("#words-pending-note")).to_contain_text("Words pending")
        assert axe_violations(page) == []
        page.get_by_role("button", name="Back to the list").click()
        open_concept(page, "rastreio-pedido")
        expect(page.locator("#words-pending-note")).to_be_hidden()
        page.get_by_role("button", name="Back to the list").click()

        page.get_by_role("button", name="Teach words…").click()
        expect(page.locator("#teach-text")).to_have_text(
            f"{CONCEPTS} concepts have no model words yet: asking for them costs 1 model call (ten concepts to a "
            "call), within the tenant's daily model calls; what they cannot pay today waits for the next day.")
        assert drain(sqs, queue) == []  # what it costs is said before anything is queued
        assert axe_violations(page) == []
        page.get_by_role("button", name=f"Teach {CONCEPTS} concepts").click()
        expect(page.locator("#teach-text")).to_contain_text(f"Queued: the words of {CONCEPTS} concepts arrive")
        expect(page.locator("#teach-confirm")).to_be_hidden()
    jobs = [json.loads(m["Body"]) for m in drain(sqs, queue)]
    assert [(j["job"], j["mode"], len(j["names"])) for j in jobs] == [("words", "backfill", CONCEPTS)]
