"""The studio page in a real headless Chromium: what waits beside a concept for the operator's judgment (a
policy review and a customer's claim no judge decided) is listed beside the editor, and the text in the
editor is the concept's own, untouched."""

from __future__ import annotations

from pathlib import Path

from helpers.browser import CHROMIUM, expect
from helpers.paths import ROOT
from helpers.skips import skip_unless_present
from helpers.studio_page import A, T, open_concept

from knowledge.store.waiting import WaitingPair

PAGE = ROOT / "studio_web" / "dist" / "index.html"
pytestmark = skip_unless_present({"Debian's chromium": Path(CHROMIUM).exists(),
                                  "the built page (./run builds it with npm)": PAGE.exists()})
NAME = "troca-em-30-dias"


def test_the_pairs_waiting_beside_a_concept_are_listed_and_its_text_is_its_own(page, store):
    store.waiting().put(T, A, WaitingPair(concept=NAME, kind="policy", why="no_model", since="2026-12-01",
                                          policy="frete-gratis-acima-199"))
    store.waiting().put(T, A, WaitingPair(concept=NAME, kind="sighting", why="unusable", since="2026-12-02",
                                          description="Cliente diz que a troca leva 60 dias.",
                                          body="A troca pode ser feita em 60 dias.", session_id="sess_61",
                                          turn_id="turn_0002"))
    open_concept(page, NAME)
    panel = page.locator("#waiting-panel")
    expect(panel).to_be_visible()
    expect(panel).to_contain_text("2 waiting for your judgment")
    expect(panel.get_by_role("link", name="frete-gratis-acima-199")).to_be_visible()
    expect(panel).to_contain_text("Cliente diz que a troca leva 60 dias.")
    expect(panel).to_contain_text("the model's answer was no verdict")
    assert "60 dias" not in page.inner_text(".cm-content")  # nothing of them was written into the text
    before = store.get(T, A, NAME).version_id
    page.click("#waiting-dismiss")
    expect(page.locator("#status")).to_have_text(f"Dismissed 2 waiting beside {NAME}.")
    expect(panel).to_be_hidden()
    assert store.waiting().counts(T, A) == {} and store.get(T, A, NAME).version_id == before


def test_a_concept_with_nothing_waiting_shows_no_panel(page, store):
    open_concept(page, "rastreio-pedido")
    expect(page.locator("#waiting-panel")).to_be_hidden()


def test_two_policies_judged_contradicting_are_both_under_the_conflict_filter(browser, studio, request, store):
    from helpers.studio_page import rows, signed_in

    for concept, other in (("frete-gratis-acima-199", "frete-gratis-brasil"),
                           ("frete-gratis-brasil", "frete-gratis-acima-199")):
        store.waiting().put(T, A, WaitingPair(concept=concept, kind="conflict", why="contradicting",
                                              since="2026-12-03", policy=other))
    from helpers.concepts import make_concept

    store.create(T, A, make_concept("frete-gratis-brasil", type="policy", provenance="policy", confidence=0.95,
                                    sources=(), description="Frete grátis para todo o Brasil.",
                                    body="O frete é grátis para todo o Brasil acima de R$ 199."), actor="operator:ana")
    with signed_in(browser, studio, request) as page:
        page.check("#filter-conflict")
        expect(page.locator("#concepts tbody tr")).to_have_count(3)  # the demo's own conflict of two sightings too
        assert set(rows(page)) == {"frete-gratis-acima-199", "frete-gratis-brasil", "prazo-reembolso-pix"}
        open_concept(page, "frete-gratis-brasil")
        panel = page.locator("#waiting-panel")
        expect(panel).to_contain_text("Judged to contradict the policy frete-gratis-acima-199")
        expect(panel).to_contain_text("both are kept")
