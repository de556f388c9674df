"""The studio page's search in a real headless Chromium: an operator types a name and finds that
concept first, its matched words highlighted, the count saying how many match."""

from __future__ import annotations

from pathlib import Path

from helpers.browser import CHROMIUM, axe_violations, expect
from helpers.paths import ROOT
from helpers.skips import skip_unless_present
from helpers.studio_page import A, T, rows, signed_in

PAGE = ROOT / "studio_web" / "dist" / "index.html"
pytestmark = skip_unless_present({"Debian's chromium": Path(CHROMIUM).exists(),
                                  "the built page (./run builds it with npm)": PAGE.exists()})


def crowded(store):
    """The intended concept written first, then many that share its words (last written first puts it last)."""
    import time
    from helpers.concepts import make_concept

    store.create(T, A, make_concept("despacho-no-mesmo-dia", description="Pedidos pagos até 12h saem no mesmo dia.",
                                    body="O despacho acontece no mesmo dia útil."), actor="engine")
    time.sleep(1.1)  # S3 stamps a write to the second
    for i in range(30):
        store.create(T, A, make_concept(
            f"pedido-lote-{i:02d}", description=f"Pedido {i:02d}: o despacho sai no mesmo dia <b>útil</b>.",
            body="O despacho do pedido ocorre no mesmo dia em que o pagamento é aprovado."), actor="engine")


def test_an_operator_typing_a_name_sees_that_concept_first_with_its_words_highlighted(browser, studio, store, request):
    crowded(store)
    with signed_in(browser, studio, request) as page:
        expect(page.locator("#catching-up")).to_be_hidden(timeout=60_000)
        assert rows(page)[0] != "despacho-no-mesmo-dia"  # unsearched: last written first
        page.locator("#filter-q").press_sequentially("despacho-no-mesmo-dia", delay=20)
        first = page.locator("#concepts tbody tr").first
        expect(first).to_have_attribute("data-name", "despacho-no-mesmo-dia")
        expect(page.locator("#status")).to_have_text("31 concepts match “despacho-no-mesmo-dia”")
        # The name's words and the snippet's matched words are marked, as text.
        marks = first.locator("button.link mark")
        assert marks.all_inner_texts() == ["despacho", "no", "mesmo", "dia"]
        expect(first.locator("td.description mark")).to_have_text(["mesmo", "dia"])
        second = page.locator("#concepts tbody tr").nth(1)
        expect(second.locator("td.description")).to_contain_text("<b>útil</b>")  # untrusted text stays text
        assert second.locator("td.description b").count() == 0
        assert page.evaluate("() => new URL(location.href).searchParams.get('sort')") is None
        assert axe_violations(page) == []  # the highlight keeps the text readable
        # A column the operator picks orders the search instead.
        page.get_by_role("button", name="Name").click()
        expect(page.locator("#concepts tbody tr").first).to_have_attribute("data-name", "despacho-no-mesmo-dia")
        page.get_by_role("button", name="Name").click()  # descending
        expect(page.locator("#concepts tbody tr").first).to_have_attribute("data-name", "pedido-lote-29")
        expect(page.locator("th[aria-sort]")).to_have_count(1)
        # Cleared, the list is last written first again, with no marks.
        page.locator("#filter-q").fill("")
        expect(page.locator("#concepts mark")).to_have_count(0)


def test_a_row_found_through_its_body_shows_the_snippet_after_a_restart(browser, studio, store, request):
    from helpers.concepts import make_concept

    store.create(T, A, make_concept("montagem-de-moveis", description="Móveis grandes chegam desmontados.",
                                    body="Um montador parceiro agenda a visita em até 5 dias úteis."), actor="engine")
    with signed_in(browser, studio, request) as page:
        studio.restart()  # the container restarted: the list comes back from its snapshot
        page.locator("#filter-q").fill("montador")
        row = page.locator("#concepts tbody tr").first
        expect(row).to_have_attribute("data-name", "montagem-de-moveis")
        expect(row.locator(".snippet")).to_contain_text("Um montador parceiro agenda a visita")
        expect(row.locator(".snippet mark")).to_have_text("montador")


def test_a_search_that_matches_nothing_because_of_one_word_says_so_and_drops_it(page):
    page.locator("#filter-q").fill("troca 30 dias xilofone")
    note = page.locator("#query-note")
    expect(note).to_contain_text("Every word must match, and no concept holds “xilofone”")
    expect(page.locator("#status")).to_have_text("0 concepts match “troca 30 dias xilofone”")
    page.get_by_role("button", name="Search without “xilofone”").click()
    expect(page.locator("#filter-q")).to_have_value("troca 30 dias")
    expect(page.locator("#concepts tbody tr").first).to_have_attribute("data-name", "troca-em-30-dias")
    expect(note).to_be_hidden()
    page.locator("#filter-q").fill("troca em 30 dias na loja com nota fiscal")
    expect(note).to_contain_text("Only the first 8 words are read: “fiscal” was not looked for.")
