"""The studio page in a real headless Chromium (Debian's, driven by Playwright), against the real
StudioApiFunction handler behind the local authorizer, on moto's S3. Screenshots go to test-artifacts/."""

from __future__ import annotations

import re
from pathlib import Path

from helpers.browser import CHROMIUM, expect
from helpers.paths import ARTIFACTS, DEMO, ROOT
from helpers.skips import skip_unless_present
from helpers.studio_page import open_concept, rows, signed_in, type_at_end_of_line


T, A = "default", "store-support"
PAGE = ROOT / "studio_web" / "dist" / "index.html"
pytestmark = skip_unless_present({"Debian's chromium": Path(CHROMIUM).exists(),
                                  "the built page (./run builds it with npm)": PAGE.exists()})


def test_the_list_shows_every_concept_and_filters_conflicts(page):
    assert len(rows(page)) == 7
    assert page.locator("#concepts tbody tr", has_text="prazo-reembolso-pix").locator(".badge.conflict").count() == 1
    page.check("#filter-conflict")
    expect(page.locator("#concepts tbody tr")).to_have_count(1)  # no eval: the page's CSP forbids it
    assert rows(page) == ["prazo-reembolso-pix"] and "status=conflict" in page.url


def test_sorting_by_a_column(page):
    updated = page.locator("th", has=page.locator("button[data-sort=written_at]"))
    expect(updated).to_have_attribute("aria-sort", "descending")  # last written first, and said so
    page.click("th button[data-sort=name]")
    name = page.locator("th", has=page.locator("button[data-sort=name]"))
    expect(name).to_have_attribute("aria-sort", "ascending")  # sorted by the server, then marked
    names = rows(page)
    assert names == sorted(names) and len(names) == 7  # a first click on Name sorts A to Z
    expect(name.locator(".arrow")).to_have_text("▲")
    assert updated.get_attribute("aria-sort") is None and updated.locator(".arrow").inner_text() == ""
    page.click("th button[data-sort=name]")
    expect(name).to_have_attribute("aria-sort", "descending")
    assert rows(page) == list(reversed(names))
    expect(name.locator(".arrow")).to_have_text("▼")


def test_edit_and_save_with_the_keyboard(page, store):
    open_concept(page, "troca-em-30-dias")
    type_at_end_of_line(page, "description:", " Keep the receipt.")
    page.keyboard.press("Control+s")
    page.wait_for_selector("#status:has-text('Saved.')")
    stored = store.get(T, A, "troca-em-30-dias")
    assert stored.concept.description.endswith("Keep the receipt.") and stored.actor == "operator:dev-operator"


def test_an_invalid_edit_shows_the_error_at_its_line(page, store):
    open_concept(page, "troca-em-30-dias")
    type_at_end_of_line(page, "type: policy", "-ish")
    page.click("#save")
    page.wait_for_selector("#errors li")
    assert "type (line 4)" in page.inner_text("#errors")
    assert_marked_at(page, 4)
    assert store.get(T, A, "troca-em-30-dias").concept.type == "policy"


def assert_marked_at(page, line):
    """The error mark is drawn (CSS, not a data: image the CSP blocks) beside the given line and nowhere else."""
    marker = page.locator(".cm-lint-marker-error")
    expect(marker).to_have_count(1)
    box, gutter_line = marker.bounding_box(), page.locator(".cm-lineNumbers .cm-gutterElement", has_text=str(line))
    target = gutter_line.filter(has_text=re.compile(f"^{line}$")).bounding_box()
    assert box["width"] > 5 and box["height"] > 5 and abs(box["y"] + box["height"] / 2 - target["y"]
                                                          - target["height"] / 2) < target["height"] / 2
    assert marker.evaluate("e => getComputedStyle(e).backgroundColor") == "rgb(255, 136, 119)"
    underline = page.locator(".cm-lintRange-error")
    assert underline.evaluate("e => getComputedStyle(e).textDecorationStyle") == "wavy"


def replace_line(page, text_in_line, replacement):
    page.locator(".cm-line", has_text=text_in_line).first.click()
    page.keyboard.press("Home")
    page.keyboard.press("Shift+End")
    page.keyboard.type(replacement)


def test_a_new_concept_s_errors_are_marked_at_their_own_line(page, store):
    page.click("#new-concept")
    replace_line(page, "name: new-concept", "name: horario-atendimento")
    replace_line(page, "type: fact", "type: horario")
    page.click("#save")
    page.wait_for_selector("#errors li")
    assert "type (line 4)" in page.inner_text("#errors")
    assert_marked_at(page, 4)
    assert store.find(T, A, "horario-atendimento") is None


def test_saving_the_untouched_template_creates_nothing(page, store):
    page.click("#new-concept")
    page.keyboard.press("Control+s")
    expect(page.locator("#status")).to_contain_text("the template is unchanged")
    assert store.find(T, A, "new-concept") is None


def test_a_save_without_changes_writes_no_version(page, store):
    open_concept(page, "troca-em-30-dias")
    page.keyboard.press("Control+s")
    expect(page.locator("#status")).to_have_text("No changes to save: nothing was written.")
    assert len(store.versions(T, A, "troca-em-30-dias")) == 1


def test_creating_a_name_that_exists_offers_to_open_it(page, store):
    requested = []
    page.on("request", lambda r: requested.append(r.url))
    page.click("#new-concept")
    replace_line(page, "name: new-concept", "name: troca-em-30-dias")
    page.click("#save")
    expect(page.locator("#taken")).to_be_visible()
    expect(page.locator("#taken h3")).to_have_text("A concept named troca-em-30-dias already exists")
    assert store.versions(T, A, "troca-em-30-dias")[0].actor == "engine"  # nothing written over it
    asked = []
    page.once("dialog", lambda dialog: (asked.append(dialog.message), dialog.accept()))
    page.click("#taken-open")
    expect(page.locator("#editor-title")).to_have_text("troca-em-30-dias")
    assert "30 dias após a entrega" in page.inner_text(".cm-content") and "unsaved changes" in asked[0]
    assert not [url for url in requested if "/null" in url or "undefined" in url]


def test_a_typo_in_the_agent_says_there_is_no_such_agent(browser, studio, request, store):
    with signed_in(browser, studio, request, path="/studio/knowledge?agent=store-suport", ready="#status:has-text('no agent')") as page:
        expect(page.locator("#status")).to_contain_text("there is no agent 'store-suport' in tenant 'default'")
        expect(page.locator("#list-view")).to_be_hidden()
        expect(page.locator("#new-concept")).to_be_hidden()
        page.get_by_role("link", name=A, exact=True).click()  # the tenant's agents, to choose the right one
        page.wait_for_selector("#concepts tbody tr")
        assert len(rows(page)) == 7 and f"agent={A}" in page.url


def test_the_deleted_view_previews_the_content_and_says_who_deleted_it_and_when(page, store):
    store.delete(T, A, "objecao-frete-caro", actor="operator:bia")
    page.click("#show-deleted")
    row = page.locator("#deleted tbody tr", has_text="objecao-frete-caro")
    assert row.locator("td").nth(2).inner_text() == "operator:bia"  # who, in the list itself
    row.get_by_role("button", name="Preview").click()
    expect(page.locator("#deleted-preview-who")).to_contain_text("Deleted by operator:bia on 20")
    assert page.inner_text("#deleted-preview-text") == (DEMO / "objecao-frete-caro.md").read_text()


def test_a_stale_save_shows_the_newer_version_and_can_overwrite_knowingly(page, store):
    open_concept(page, "troca-em-30-dias")
    current = store.get(T, A, "troca-em-30-dias")  # another operator saves meanwhile
    store.replace(T, A, current.concept.replace(description="Changed by someone else."), if_match=current.etag,
                  actor="operator:bob", reason="edit")
    type_at_end_of_line(page, "description:", " Mine.")
    page.click("#save")
    page.wait_for_selector("#stale:not([hidden])")
    theirs, mine = page.locator("#stale-theirs"), page.locator("#stale-mine")
    expect(theirs.locator(".cm-changedLine")).to_have_count(1)  # three ways: each side against the start
    assert "Changed by someone else." in theirs.locator(".cm-changedLine").inner_text()
    deleted = theirs.locator(".cm-deletedChunk").inner_text()
    assert "Trocas e devoluções são aceitas em até 30 dias após a entrega." in deleted
    expect(mine.locator(".cm-changedLine")).to_have_count(1)
    assert mine.locator(".cm-changedLine").inner_text().endswith("entrega. Mine.")
    assert "Changed by someone else." not in page.inner_text("#stale-mine")
    assert "embalagem original" not in page.inner_text("#stale")  # unchanged lines folded away
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "stale-three-way.png"), full_page=True)
    page.click("#stale-overwrite")
    page.wait_for_selector("#status:has-text('Saved.')")
    assert store.get(T, A, "troca-em-30-dias").concept.description.endswith("entrega. Mine.")


def test_restore_from_history(page, store):
    open_concept(page, "troca-em-30-dias")
    type_at_end_of_line(page, "description:", " Temporary.")
    page.keyboard.press("Control+s")
    page.wait_for_selector("#status:has-text('Saved.')")
    page.click("#history")
    page.wait_for_selector("#versions tbody tr >> nth=1")
    page.locator("#versions tbody tr", has_text="created").get_by_role("button", name="Restore").click()
    page.wait_for_selector("#status:has-text('Restored as a new version.')")
    assert store.get(T, A, "troca-em-30-dias").text == (DEMO / "troca-em-30-dias.md").read_text()


def test_delete_with_confirmation_then_undelete(page, store):
    open_concept(page, "objecao-frete-caro")
    page.once("dialog", lambda dialog: dialog.accept())
    page.click("#delete")
    page.wait_for_selector("#status:has-text('Deleted.')")
    assert "objecao-frete-caro" not in rows(page) and store.find(T, A, "objecao-frete-caro") is None
    page.click("#show-deleted")
    page.locator("#deleted tbody tr", has_text="objecao-frete-caro").get_by_role("button", name="Restore").click()
    page.wait_for_selector("#status:has-text('is back.')")
    assert "objecao-frete-caro" in rows(page)


def test_sign_in_keeps_the_pages_query_and_a_401_signs_in_again(browser, studio):
    context = browser.new_context()
    page = context.new_page()
    page.goto(f"{studio.url}/studio/knowledge?agent={A}&status=conflict")
    page.wait_for_selector("#signin:not([hidden])")
    page.click("#signin-link")
    page.wait_for_selector("#concepts tbody tr")
    assert rows(page) == ["prazo-reembolso-pix"] and "agent=store-support" in page.url and "code=" not in page.url
    page.evaluate("() => sessionStorage.setItem('knowledge-studio-token', 'expired-or-forged')")
    page.reload()
    page.wait_for_selector("#signin:not([hidden])")  # the API said 401
    context.close()


def test_history_says_which_session_taught_a_version_and_shows_its_quote_on_demand(browser, studio, store, s3,
                                                                                     sessions_bucket, request):
    from helpers.studio import archive_demo_turn, learned_from

    turn = archive_demo_turn(s3, sessions_bucket)
    learned_from(store, turn, 1, "chegam em 1 a 2 dias úteis")
    content = turn.messages[0].content
    learned_from(store, turn, 0, content[content.index("Moro"):], start=content.index("Moro"))
    with signed_in(browser, studio, request) as page:
        open_concept(page, "cep-sudeste-cd-campinas")
        page.click("#history")
        history = page.locator("#versions tbody tr")
        expect(history).to_have_count(3)
        assert history.nth(0).locator(".learned").inner_text() == "learned from session sess_demo_01"
        assert history.nth(2).locator(".learned").count() == 0  # seeded by hand: learned from no session
        assert "úteis" not in page.inner_text("#versions")  # the quote is read only when asked for
        history.nth(1).get_by_role("button", name="Show quote").click()
        expect(history.nth(1).locator("blockquote.excerpt")).to_have_text("chegam em 1 a 2 dias úteis")
        history.nth(0).get_by_role("button", name="Show quote").click()
        quote = history.nth(0).locator("blockquote.excerpt")
        expect(quote).to_contain_text("Moro em Campinas")
        assert quote.inner_text().endswith("Meu e-mail é [email]") and "ana.souza" not in page.content()


def test_a_quote_whose_conversation_expired_says_expired(browser, studio, store, s3, sessions_bucket, request):
    from helpers.studio import archive_demo_turn, learned_from

    from knowledge.store.archive import TurnArchive

    turn = archive_demo_turn(s3, sessions_bucket)
    learned_from(store, turn, 1, "chegam em 1 a 2 dias úteis")
    s3.delete_object(Bucket=sessions_bucket, Key=TurnArchive(s3, sessions_bucket).key(turn))  # retention ran out
    with signed_in(browser, studio, request) as page:
        open_concept(page, "cep-sudeste-cd-campinas")
        page.click("#history")
        first = page.locator("#versions tbody tr").first
        expect(first.locator(".learned")).to_have_text("learned from session sess_demo_01")
        first.get_by_role("button", name="Show quote").click()
        expect(first.locator("blockquote.excerpt.expired")).to_contain_text("expired")


def test_related_claims_waiting_are_marked_filtered_shown_in_the_editor_and_cleared_by_folding(
        browser, studio, store, request):
    from helpers.studio import keep_related_beside

    keep_related_beside(store)
    with signed_in(browser, studio, request) as page:
        row = page.locator("#concepts tbody tr", has_text="troca-em-30-dias")
        expect(row.locator(".badge.related")).to_have_text("1 related claim")
        assert row.locator(".badge.conflict").count() == 0
        page.check("#filter-related")
        expect(page.locator("#concepts tbody tr")).to_have_count(1)
        assert rows(page) == ["troca-em-30-dias"] and "status=related" in page.url
        open_concept(page, "troca-em-30-dias")
        expect(page.locator("#related-note")).to_be_visible()
        expect(page.locator("#related-note")).to_contain_text("1 related claim was kept beside your text")
        tinted = page.locator(".cm-line.cm-related-claims")
        assert tinted.first.inner_text() == "## Related claims" and tinted.count() >= 3
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"{request.node.name}-editor.png"), full_page=True)
        page.click("#related-show")  # selects the section, ready to cut or fold in
        page.keyboard.press("Delete")
        expect(tinted).to_have_count(0)
        page.keyboard.press("Control+s")
        page.wait_for_selector("#status:has-text('Saved.')")
        expect(page.locator("#related-note")).to_be_hidden()
        assert "Related claims" not in store.get(T, A, "troca-em-30-dias").text
        page.click("#back-from-editor")
        expect(page.locator("#empty")).to_be_visible()  # the related filter is still on: nothing waits


# ------------------------------------------------------------------ diffs

def test_history_shows_what_each_version_changed_against_the_one_before(page, store):
    current = store.get(T, A, "troca-em-30-dias")
    store.replace(T, A, current.concept.replace(description="Trocas e devoluções em até 30 dias corridos."),
                  if_match=current.etag, actor="operator:bob", reason="edit")
    open_concept(page, "troca-em-30-dias")
    page.click("#history")
    newest = page.locator("#versions tbody tr").first
    newest.get_by_role("button", name="Changes").click()
    label = page.locator("#diff-label")
    expect(label).to_contain_text("by operator:bob (edit)")
    expect(label).to_contain_text("against the one before, of")
    expect(label).to_contain_text("by engine (created)")
    removed = page.locator("#diff .cm-deletedChunk")
    expect(removed).to_contain_text("Trocas e devoluções são aceitas em até 30 dias após a entrega.")
    added = page.locator("#diff .cm-changedLine")
    expect(added).to_have_count(1)
    assert "Trocas e devoluções em até 30 dias corridos." in added.inner_text()
    assert "embalagem original" not in page.inner_text("#diff")  # unchanged lines are folded away
    page.locator("#versions tbody tr", has_text="created").get_by_role("button", name="Against current").click()
    expect(label).to_contain_text("The current version, of")
    expect(page.locator("#diff .cm-changedLine")).to_have_count(1)
    page.locator("#versions tbody tr", has_text="created").get_by_role("button", name="Changes").click()
    expect(label).to_contain_text("The first version")
    assert "".join(page.locator("#diff .cm-deletedChunk").all_inner_texts()).strip() == ""  # nothing came before
    assert "embalagem original" in "\n".join(page.locator("#diff .cm-changedLine").all_inner_texts())  # all of it new


def test_errors_are_listed_in_line_order_and_each_jumps_the_editor_to_its_line(page, store):
    open_concept(page, "troca-em-30-dias")
    # The operator's own order of fields: confidence (wrong) on line 3, type (wrong) on line 4.
    replace_line(page, "description: Trocas", "confidence: 3")
    replace_line(page, "type: policy", "type: politica")
    replace_line(page, "confidence: 0.95",
                 "description: Trocas e devoluções são aceitas em até 30 dias após a entrega.")
    page.click("#save")
    errors = page.locator("#errors li")
    expect(errors).to_have_count(2)
    assert [errors.nth(i).inner_text().split(":")[0] for i in range(2)] == ["confidence (line 3)", "type (line 4)"]
    errors.nth(1).get_by_role("button").click()
    expect(page.locator(".cm-content")).to_be_focused()
    expect(page.locator(".cm-activeLine")).to_have_text("type: politica")
    page.keyboard.press("Shift+Home")
    page.keyboard.type("type: policy")  # fixed where the error took the editor
    errors.nth(0).get_by_role("button").click()
    expect(page.locator(".cm-activeLine")).to_have_text("confidence: 3")
    page.keyboard.press("Backspace")
    page.keyboard.type("0.9")
    page.keyboard.press("Control+s")
    page.wait_for_selector("#status:has-text('Saved.')")
    stored = store.get(T, A, "troca-em-30-dias").concept
    assert (stored.type, stored.confidence) == ("policy", 0.9)
