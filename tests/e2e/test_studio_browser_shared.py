"""The tenant's shared knowledge in a real headless Chromium: an operator copies an agent's concept to
shared knowledge, opens it there (its scope on the page and on its row), edits it once, moves another
concept there (the agent's own goes to Deleted concepts), is told when the name is taken, and sees
the shared scope in the agents overview and, for an agent that opts in, which of its rows override
a shared concept."""

from __future__ import annotations

from pathlib import Path

from helpers.browser import CHROMIUM, expect
from helpers.paths import DEMO, ROOT
from helpers.skips import skip_unless_present
from helpers.studio_page import A, T, open_concept, rows, type_at_end_of_line

from knowledge.store.keys import SHARED

PAGE = ROOT / "studio_web" / "dist" / "index.html"
pytestmark = skip_unless_present({"Debian's chromium": Path(CHROMIUM).exists(),
                                  "the built page (./run builds it with npm)": PAGE.exists()})


def test_an_operator_copies_edits_and_moves_concepts_to_shared_knowledge(page, store, studio):
    open_concept(page, "troca-em-30-dias")
    page.click("#copy-to-shared")
    expect(page.locator("#status")).to_contain_text("Copied troca-em-30-dias to shared knowledge")
    assert store.get(T, SHARED, "troca-em-30-dias").text == (DEMO / "troca-em-30-dias.md").read_text()
    assert store.find(T, A, "troca-em-30-dias") is not None

    # Copied again: the name is taken there, and the page says so.
    page.click("#copy-to-shared")
    expect(page.locator("#shared-note")).to_contain_text("already has a concept named troca-em-30-dias")

    # Opened in shared knowledge: the scope is on the page, and nothing there copies to itself.
    page.click("#shared-note-link")
    page.wait_for_selector(".cm-content")
    expect(page.locator("#scope")).to_have_text(f"{T} / shared knowledge")
    expect(page.locator("#copy-to-shared")).to_be_hidden()
    expect(page.locator("#show-vocabulary")).to_be_hidden()
    type_at_end_of_line(page, "em até 30 dias após a entrega", " Vale para todas as lojas.")
    page.click("#save")
    expect(page.locator("#status")).to_have_text("Saved.")
    assert "Vale para todas as lojas." in store.get(T, SHARED, "troca-em-30-dias").text
    assert "Vale para todas as lojas." not in store.get(T, A, "troca-em-30-dias").text
    page.click("#back-from-editor")
    page.wait_for_selector("#concepts tbody tr")
    assert rows(page) == ["troca-em-30-dias"]
    expect(page.locator("#concepts tbody tr .badge.shared")).to_have_text("shared")
    expect(page.locator("#shared-line")).to_contain_text("every agent that opts in")

    # Moved from the agent: its own is in Deleted concepts, the shared one is there.
    page.goto(f"{studio.url}/studio/knowledge?agent={A}&concept=prazo-reembolso-pix")
    page.wait_for_selector(".cm-content")
    # The agent does not recall shared knowledge: the page asks first, and a No moves nothing.
    asked = []
    page.once("dialog", lambda dialog: (asked.append(dialog.message), dialog.dismiss()))
    page.click("#move-to-shared")
    expect(page.locator("#status")).to_have_text("Not moved: prazo-reembolso-pix stays in this agent.")
    assert "no longer recalls prazo-reembolso-pix" in asked[0] and store.find(T, A, "prazo-reembolso-pix")
    page.once("dialog", lambda dialog: dialog.accept())
    page.click("#move-to-shared")
    expect(page.locator("#status")).to_contain_text("Moved prazo-reembolso-pix to shared knowledge")
    page.wait_for_selector("#list-view:not([hidden])")
    assert "prazo-reembolso-pix" not in rows(page)
    assert store.find(T, A, "prazo-reembolso-pix") is None
    assert store.get(T, SHARED, "prazo-reembolso-pix").text == (DEMO / "prazo-reembolso-pix.md").read_text()

    # The overview counts the shared scope beside the agents.
    page.goto(f"{studio.url}/studio/knowledge")
    page.wait_for_selector("#agents-view:not([hidden])")
    expect(page.locator("#shared-counts")).to_have_text("(2 concepts, 1 to resolve)")  # the moved one holds a conflict
    expect(page.locator("#agents tbody tr")).to_have_count(1)

    # An agent that opts in: its row of a shared name overrides it, and the list says what else it recalls.
    store.put_config(T, A, "knowledge:\n  shared: true\n  stale_after_days: 3650\n", actor="operator:demo")
    page.goto(f"{studio.url}/studio/knowledge?agent={A}")
    page.wait_for_selector("#concepts tbody tr")
    expect(page.locator("#concepts tbody tr[data-name='troca-em-30-dias'] .badge.shared")).to_have_text(
        "overrides shared")
    expect(page.locator("#concepts tbody .badge.shared")).to_have_count(1)
    expect(page.locator("#shared-line")).to_contain_text("This agent also recalls 1 shared concept of the tenant")


def test_a_move_whose_list_then_fails_leaves_the_problem_on_screen_not_the_moved_concept(page, store, studio):
    page.goto(f"{studio.url}/studio/knowledge?agent={A}&concept=prazo-reembolso-pix")
    page.wait_for_selector(".cm-content")
    # The move is answered; every request after it (the list) fails.
    page.route("**/concepts?*", lambda route: route.fulfill(status=503, content_type="application/json",
                                                           body='{"error": {"code": "unavailable", "message": "down"}}'))
    page.once("dialog", lambda dialog: dialog.accept())
    page.click("#move-to-shared")
    expect(page.locator("#problem")).to_contain_text("Could not load the concepts")
    expect(page.locator("#status")).to_contain_text("Moved prazo-reembolso-pix to shared knowledge")
    expect(page.locator("#editor-view")).to_be_hidden()
    assert store.find(T, A, "prazo-reembolso-pix") is None and store.find(T, SHARED, "prazo-reembolso-pix")
    page.unroute("**/concepts?*")
    page.click("#problem button")  # Try again: the list, without the moved concept
    page.wait_for_selector("#list-view:not([hidden])")
    assert "prazo-reembolso-pix" not in rows(page)
