"""The studio page in a real headless Chromium: it never loses an operator's work (unsaved
changes, a 401 mid-save, back and forward), and failures are said on screen with a way to try again."""

from __future__ import annotations

from pathlib import Path

from helpers.browser import CHROMIUM, expect
from helpers.paths import ROOT
from helpers.skips import skip_unless_present
from helpers.studio_page import A, T, open_concept, rows, signed_in, type_at_end_of_line

PAGE = ROOT / "studio_web" / "dist" / "index.html"
pytestmark = skip_unless_present({"Debian's chromium": Path(CHROMIUM).exists(),
                                  "the built page (./run builds it with npm)": PAGE.exists()})


# ------------------------------------------------------------------ never lose work

def test_leaving_or_restoring_over_unsaved_changes_asks_first(page, store):
    open_concept(page, "troca-em-30-dias")
    expect(page.locator("#dirty")).to_be_hidden()
    type_at_end_of_line(page, "description:", " Rascunho.")
    expect(page.locator("#dirty")).to_be_visible()
    asked = []
    page.once("dialog", lambda dialog: (asked.append(dialog.message), dialog.dismiss()))
    page.click("#back-from-editor")
    expect(page.locator("#editor-view")).to_be_visible()  # declined: still editing, the text kept
    assert "unsaved changes to troca-em-30-dias" in asked[0]
    assert "Rascunho." in page.inner_text(".cm-content")
    page.click("#history")
    page.locator("#versions tbody tr").first.wait_for()
    store_before = store.get(T, A, "troca-em-30-dias").etag
    page.once("dialog", lambda dialog: (asked.append(dialog.message), dialog.dismiss()))
    page.go_back()  # the browser's Back, too
    expect(page.locator("#editor-view")).to_be_visible()
    assert len(asked) == 2 and "concept=troca-em-30-dias" in page.url
    page.once("dialog", lambda dialog: (asked.append(dialog.message), dialog.accept()))
    page.click("#back-from-editor")
    page.wait_for_selector("#list-view:not([hidden])")
    assert len(asked) == 3 and store.get(T, A, "troca-em-30-dias").etag == store_before


def test_restoring_an_old_version_over_unsaved_changes_asks_first(page, store):
    open_concept(page, "troca-em-30-dias")
    type_at_end_of_line(page, "description:", " Temporary.")
    page.keyboard.press("Control+s")
    page.wait_for_selector("#status:has-text('Saved.')")
    type_at_end_of_line(page, "description:", " Not saved yet.")
    page.click("#history")
    page.once("dialog", lambda dialog: dialog.dismiss())
    page.locator("#versions tbody tr", has_text="created").get_by_role("button", name="Restore").click()
    assert "Not saved yet." in page.inner_text(".cm-content")
    assert store.versions(T, A, "troca-em-30-dias")[0].reason == "edit"  # nothing restored


def test_closing_the_tab_with_unsaved_changes_asks_first(browser, studio, request):
    with signed_in(browser, studio, request) as page:
        open_concept(page, "troca-em-30-dias")
        type_at_end_of_line(page, "description:", " Unsaved.")
        page.locator(".cm-content").click()  # a user gesture: Chromium asks only on a page that had one
        kinds = []
        page.once("dialog", lambda dialog: (kinds.append(dialog.type), dialog.dismiss()))
        page.close(run_before_unload=True)
        page.wait_for_timeout(300)
        assert kinds == ["beforeunload"] and not page.is_closed()


def test_a_401_during_a_save_keeps_the_draft_and_returns_to_it_after_sign_in(page, store):
    open_concept(page, "troca-em-30-dias")
    type_at_end_of_line(page, "description:", " Com a nota fiscal.")
    page.evaluate("() => sessionStorage.setItem('knowledge-studio-token', 'expired-or-forged')")
    page.keyboard.press("Control+s")
    page.wait_for_selector("#signin:not([hidden])")
    expect(page.locator("#status")).to_contain_text("unsaved changes to troca-em-30-dias are kept in this tab")
    assert "Com a nota fiscal." not in store.get(T, A, "troca-em-30-dias").text
    page.click("#signin-link")
    page.wait_for_selector("#editor-view:not([hidden])")
    assert "concept=troca-em-30-dias" in page.url and "code=" not in page.url
    expect(page.locator("#status")).to_contain_text("Your unsaved changes are back in the editor")
    assert "entrega. Com a nota fiscal." in page.inner_text(".cm-content")
    expect(page.locator("#dirty")).to_be_visible()
    page.keyboard.press("Control+s")
    page.wait_for_selector("#status:has-text('Saved.')")
    assert store.get(T, A, "troca-em-30-dias").concept.description.endswith("entrega. Com a nota fiscal.")


def test_the_open_concept_is_in_the_url_and_back_and_forward_move_between_list_and_concept(page, studio):
    open_concept(page, "rastreio-pedido")
    assert "concept=rastreio-pedido" in page.url and "agent=store-support" in page.url
    page.go_back()
    page.wait_for_selector("#list-view:not([hidden])")
    assert "concept=" not in page.url
    page.go_forward()
    page.wait_for_selector("#editor-view:not([hidden])")
    expect(page.locator("#editor-title")).to_have_text("rastreio-pedido")
    page.goto(f"{studio.url}/studio/knowledge?agent={A}&concept=troca-em-30-dias")  # a deep link
    expect(page.locator("#editor-title")).to_have_text("troca-em-30-dias")
    assert "30 dias após a entrega" in page.inner_text(".cm-content")
    page.goto(f"{studio.url}/studio/knowledge?agent={A}&concept=nao-existe")
    page.wait_for_selector("#list-view:not([hidden])")
    expect(problem(page)).to_contain_text("Could not open nao-existe: there is no concept 'nao-existe' in this agent")
    expect(page.locator("#problem-retry")).to_be_hidden()  # asking again would not help


# ------------------------------------------------------------------ failures said on screen

def api_down(page, status=None):
    """Every API request fails: the connection drops, or (with a status) a gateway answers it."""
    if status is None:
        page.route("**/api/**", lambda route: route.abort())
    else:
        page.route("**/api/**", lambda route: route.fulfill(status=status, content_type="text/html",
                                                            body="<html>Service Unavailable</html>"))


def api_back(page):
    page.unroute("**/api/**")


def problem(page):
    return page.locator("#problem")


def test_when_the_api_is_down_every_action_says_so_and_try_again_does_it(page, store):
    open_concept(page, "troca-em-30-dias")
    api_down(page)
    page.click("#history")
    expect(page.locator("#problem-text")).to_have_text(
        "Could not load the history: the studio could not reach the service. Check the connection, then try again.")
    expect(problem(page).get_by_role("button", name="Try again")).to_be_visible()
    expect(page.locator("#history-panel")).to_be_hidden()
    api_back(page)
    page.click("#problem-retry")
    expect(page.locator("#versions tbody tr")).to_have_count(1)
    expect(problem(page)).to_be_hidden()

    api_down(page)
    page.locator("#versions tbody tr").first.get_by_role("button", name="View").click()
    expect(problem(page)).to_contain_text("Could not read that version: the studio could not reach the service")
    api_back(page)
    page.click("#problem-retry")
    expect(page.locator("#version-preview")).to_contain_text("30 dias após a entrega")

    api_down(page, status=503)
    page.once("dialog", lambda dialog: dialog.accept())
    page.click("#delete")
    expect(problem(page)).to_contain_text("Not deleted: troca-em-30-dias is still there: the service could not "
                                          "answer just now (HTTP 503). Try again in a moment.")
    assert store.find(T, A, "troca-em-30-dias") is not None
    api_back(page)
    page.click("#problem-retry")
    expect(page.locator("#status")).to_contain_text("Deleted.")
    assert store.find(T, A, "troca-em-30-dias") is None

    api_down(page)
    page.click("#show-deleted")
    expect(problem(page)).to_contain_text("Could not load the deleted concepts")
    expect(page.locator("#deleted-view")).to_be_hidden()
    api_back(page)
    page.click("#problem-retry")
    row = page.locator("#deleted tbody tr", has_text="troca-em-30-dias")
    api_down(page)
    row.get_by_role("button", name="Preview").click()
    expect(problem(page)).to_contain_text("Could not show what troca-em-30-dias held")
    row.get_by_role("button", name="Restore").click()
    expect(problem(page)).to_contain_text("Not restored: troca-em-30-dias is still deleted")
    assert store.find(T, A, "troca-em-30-dias") is None
    api_back(page)
    page.click("#problem-retry")
    expect(page.locator("#status")).to_have_text("troca-em-30-dias is back.")
    assert store.find(T, A, "troca-em-30-dias") is not None


def test_a_save_that_cannot_reach_the_api_keeps_the_text_and_retries(page, store):
    open_concept(page, "troca-em-30-dias")
    type_at_end_of_line(page, "description:", " Guarde a nota.")
    api_down(page)
    page.keyboard.press("Control+s")
    expect(problem(page)).to_contain_text("Not saved (your text is still in the editor): the studio could not reach")
    expect(page.locator("#dirty")).to_be_visible()
    api_back(page)
    page.click("#problem-retry")
    expect(page.locator("#status")).to_have_text("Saved.")
    assert store.get(T, A, "troca-em-30-dias").concept.description.endswith("Guarde a nota.")


def test_a_filter_that_fails_is_not_left_ticked_over_the_unfiltered_list(page):
    api_down(page)
    page.click("#filter-conflict")
    expect(problem(page)).to_contain_text("The filter was not applied (the list below is unchanged)")
    expect(page.locator("#filter-conflict")).not_to_be_checked()
    assert len(rows(page)) == 7 and "status=conflict" not in page.url
    api_back(page)
    page.click("#problem-retry")
    expect(page.locator("#concepts tbody tr")).to_have_count(1)
    expect(page.locator("#filter-conflict")).to_be_checked()
    assert rows(page) == ["prazo-reembolso-pix"]
