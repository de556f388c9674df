"""The list's two times, clearly named and explained: when the concept was last confirmed (its
updated_at, what staleness counts from) and when its current version was saved (by whom, why)."""

from __future__ import annotations

import time
from pathlib import Path

from helpers.browser import CHROMIUM, expect
from helpers.paths import ROOT
from helpers.skips import skip_unless_present

PAGE = ROOT / "studio_web" / "dist" / "index.html"
pytestmark = skip_unless_present({"Debian's chromium": Path(CHROMIUM).exists(),
                                  "the built page (./run builds it with npm)": PAGE.exists()})


def test_the_two_times_are_named_for_what_they_are_and_explained_beside_the_list(page):
    headings = page.locator("#concepts thead th").all_inner_texts()
    assert [h.rstrip("▲▼") for h in headings[6:8]] == ["Last confirmed (UTC)", "Version saved (UTC)"]
    hint = page.locator("#dates-hint")
    expect(hint).to_be_visible()
    expect(hint).to_contain_text("Last confirmed: when a conversation last confirmed or changed what the concept says")
    expect(hint).to_contain_text("staleness counts from it")
    expect(hint).to_contain_text("Version saved: when its current version was stored, by whom and why")
    for sort in ("updated_at", "written_at"):
        described = page.locator(f"th button[data-sort={sort}]").get_attribute("aria-describedby")
        assert described == "dates-hint"
    # The demo's exchange policy states 2026-08-01 and was stored by the engine just now.
    row = page.locator("#concepts tbody tr[data-name=troca-em-30-dias] td")
    expect(row.nth(6)).to_have_text("2026-08-01 12:00")
    expect(row.nth(7)).to_contain_text(time.strftime("%Y-%m-%d", time.gmtime()))
    expect(row.nth(7)).to_contain_text("created by the engine")
