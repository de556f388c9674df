"""The studio page in a real headless Chromium shows what retrieval leaves out: a badge saying
why (expired, not started, stale, retired by a policy) and a filter for each, kept in the URL."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

from helpers.browser import CHROMIUM, axe_violations, expect
from helpers.concepts import make_concept
from helpers.paths import ROOT
from helpers.skips import skip_unless_present
from helpers.studio import seen_recently
from helpers.studio_page import A, T, rows, signed_in

PAGE = ROOT / "studio_web" / "dist" / "index.html"
pytestmark = skip_unless_present({"Debian's chromium": Path(CHROMIUM).exists(),
                                  "the built page (./run builds it with npm)": PAGE.exists()})


def test_the_expired_not_started_and_stale_filters_list_only_those_rows_with_their_badge(browser, studio, store,
                                                                                      request):
    stored = store.get_config(T, A)
    text = 'knowledge:\n  utc_offset: "-03:00"\n  stale_after_days: 180\n'
    store.put_config(T, A, text, actor="operator:demo", if_match=stored.etag if stored else None)
    seen_recently(store, tenant=T, agent=A)  # the demo's observed concepts: a month ago, in any year
    now = datetime.now(timezone.utc).replace(microsecond=0)
    today = (now - timedelta(hours=3)).date()
    store.create(T, A, make_concept("frete-gratis-natal", created_at=now, updated_at=now,
                                    valid_until=today - timedelta(days=1)), actor="engine")
    store.create(T, A, make_concept("cupom-verao", created_at=now, updated_at=now,
                                    valid_from=today + timedelta(days=3)), actor="engine")
    old = now - timedelta(days=200)
    store.create(T, A, make_concept("entrega-manaus", created_at=old, updated_at=old), actor="engine")
    with signed_in(browser, studio, request) as page:
        expired = page.locator("#concepts tbody tr", has_text="frete-gratis-natal")
        expect(expired.locator(".badge.out-of-recall")).to_have_text("expired")
        page.check("#filter-expired")
        expect(page.locator("#concepts tbody tr").first).to_have_attribute("data-name", "frete-gratis-natal")
        expect(page.locator("#concepts tbody tr")).to_have_count(1)
        assert rows(page) == ["frete-gratis-natal"] and "status=expired" in page.url
        page.check("#filter-not-started")  # one status at a time
        expect(page.locator("#filter-expired")).not_to_be_checked()
        expect(page.locator("#concepts tbody tr").first).to_have_attribute("data-name", "cupom-verao")
        expect(page.locator("#concepts tbody tr")).to_have_count(1)
        assert rows(page) == ["cupom-verao"] and "status=not_started" in page.url
        expect(page.locator("#concepts tbody tr .badge.out-of-recall")).to_have_text("not started")
        page.check("#filter-stale")
        expect(page.locator("#concepts tbody tr").first).to_have_attribute("data-name", "entrega-manaus")
        expect(page.locator("#concepts tbody tr")).to_have_count(1)
        assert rows(page) == ["entrega-manaus"] and "status=stale" in page.url
        assert axe_violations(page) == []
        page.reload()
        page.wait_for_selector("#concepts tbody tr")
        expect(page.locator("#filter-stale")).to_be_checked()
        assert rows(page) == ["entrega-manaus"]
        page.uncheck("#filter-stale")
        expect(page.locator("#concepts tbody tr")).to_have_count(10)


def test_a_concept_a_policy_retired_is_listed_under_its_filter_with_its_badge(browser, studio, store, request):
    store.create(T, A, make_concept("troca-em-7-dias", retired_by="troca-em-30-dias"), actor="engine")
    with signed_in(browser, studio, request) as page:
        retired = page.locator("#concepts tbody tr", has_text="troca-em-7-dias")
        expect(retired.locator(".badge.out-of-recall")).to_have_text("retired")
        page.check("#filter-retired")
        expect(page.locator("#concepts tbody tr").first).to_have_attribute("data-name", "troca-em-7-dias")
        expect(page.locator("#concepts tbody tr")).to_have_count(1)
        assert rows(page) == ["troca-em-7-dias"] and "status=retired" in page.url
        assert axe_violations(page) == []
        page.reload()
        page.wait_for_selector("#concepts tbody tr")
        expect(page.locator("#filter-retired")).to_be_checked()
