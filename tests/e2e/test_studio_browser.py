"""The studio page in a real headless Chromium (Debian's, driven by Playwright), against the real
StudioApiFunction handler behind the local authorizer, on moto's S3. Screenshots go to test-artifacts/."""

from __future__ import annotations

import re
import uuid
from contextlib import contextmanager
from pathlib import Path

import pytest
from conftest import (
    ARTIFACTS,
    CHROMIUM,
    DEMO,
    ROOT,
    LambdaContext,
    expect,
    load_handler,
    signed_in_page,
    skip_unless_present,
)

from knowledge.format.concept import parse

T, A = "default", "store-support"
PAGE = ROOT / "studio_web" / "dist" / "index.html"
pytestmark = skip_unless_present({"Debian's chromium": Path(CHROMIUM).exists(),
                                  "the built page (./run builds it with npm)": PAGE.exists()})


@pytest.fixture
def studio(monkeypatch, store, bucket, sessions_bucket):
    from knowledge_dev.studio_server import LocalAuthorizer, StudioServer

    for path in sorted(DEMO.glob("*.md")):
        store.create(T, A, parse(path.read_text()), actor="engine")
    handler = load_handler("studio_api", monkeypatch, KNOWLEDGE_BUCKET=bucket, SESSIONS_BUCKET=sessions_bucket,
                           POWERTOOLS_SERVICE_NAME=f"studio-{uuid.uuid4().hex[:6]}", POWERTOOLS_LOG_LEVEL="WARNING")
    authorizer = LocalAuthorizer(issuer="http://127.0.0.1/dev")
    server = StudioServer(handler.lambda_handler, authorizer, context_factory=LambdaContext).start()
    server.authorizer = authorizer  # to sign in another operator than the dev one
    monkeypatch.setenv("STUDIO_ORIGIN", server.url)
    yield server
    server.stop()


@pytest.fixture
def page(browser, studio, request):
    with signed_in_page(browser, f"{studio.url}/studio/knowledge?agent={A}", "#concepts tbody tr",
                        f"{request.node.name}.png") as page:
        yield page


def rows(page):
    return page.locator("#concepts tbody tr").evaluate_all("rows => rows.map(r => r.dataset.name)")


def open_concept(page, name):
    page.get_by_role("button", name=name, exact=True).click()
    page.wait_for_selector(".cm-content")


def type_at_end_of_line(page, text_in_line, typed):
    page.locator(".cm-line", has_text=text_in_line).first.click()
    page.keyboard.press("End")
    page.keyboard.type(typed)


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
    assert "30 days of delivery" in page.inner_text(".cm-content") and "unsaved changes" in asked[0]
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
    assert "Exchanges and returns are accepted within 30 days of delivery." in theirs.locator(".cm-deletedChunk").inner_text()
    expect(mine.locator(".cm-changedLine")).to_have_count(1)
    assert mine.locator(".cm-changedLine").inner_text().endswith("delivery. Mine.")
    assert "Changed by someone else." not in page.inner_text("#stale-mine")
    assert "original packaging" not in page.inner_text("#stale")  # unchanged lines folded away
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "stale-three-way.png"), full_page=True)
    page.click("#stale-overwrite")
    page.wait_for_selector("#status:has-text('Saved.')")
    assert store.get(T, A, "troca-em-30-dias").concept.description.endswith("delivery. Mine.")


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
    from test_studio_api import archive_demo_turn, learned_from

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
    from test_studio_api import archive_demo_turn, learned_from

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
    from test_studio_api import keep_related_beside

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
    type_at_end_of_line(page, "description:", " Embalagem original.")
    page.evaluate("() => sessionStorage.setItem('knowledge-studio-token', 'expired-or-forged')")
    page.keyboard.press("Control+s")
    page.wait_for_selector("#signin:not([hidden])")
    expect(page.locator("#status")).to_contain_text("unsaved changes to troca-em-30-dias are kept in this tab")
    assert "Embalagem original." not in store.get(T, A, "troca-em-30-dias").text
    page.click("#signin-link")
    page.wait_for_selector("#editor-view:not([hidden])")
    assert "concept=troca-em-30-dias" in page.url and "code=" not in page.url
    expect(page.locator("#status")).to_contain_text("Your unsaved changes are back in the editor")
    assert "delivery. Embalagem original." in page.inner_text(".cm-content")
    expect(page.locator("#dirty")).to_be_visible()
    page.keyboard.press("Control+s")
    page.wait_for_selector("#status:has-text('Saved.')")
    assert store.get(T, A, "troca-em-30-dias").concept.description.endswith("delivery. Embalagem original.")


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
    assert "30 days of delivery" in page.inner_text(".cm-content")
    page.goto(f"{studio.url}/studio/knowledge?agent={A}&concept=nao-existe")
    page.wait_for_selector("#list-view:not([hidden])")
    expect(problem(page)).to_contain_text("Could not open nao-existe: there is no concept 'nao-existe' in this agent")
    expect(page.locator("#problem-retry")).to_be_hidden()  # asking again would not help


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
    expect(removed).to_contain_text("Exchanges and returns are accepted within 30 days of delivery.")
    added = page.locator("#diff .cm-changedLine")
    expect(added).to_have_count(1)
    assert "Trocas e devoluções em até 30 dias corridos." in added.inner_text()
    assert "original packaging" not in page.inner_text("#diff")  # unchanged lines are folded away
    page.locator("#versions tbody tr", has_text="created").get_by_role("button", name="Against current").click()
    expect(label).to_contain_text("The current version, of")
    expect(page.locator("#diff .cm-changedLine")).to_have_count(1)
    page.locator("#versions tbody tr", has_text="created").get_by_role("button", name="Changes").click()
    expect(label).to_contain_text("The first version")
    assert "".join(page.locator("#diff .cm-deletedChunk").all_inner_texts()).strip() == ""  # nothing came before
    assert "original packaging" in "\n".join(page.locator("#diff .cm-changedLine").all_inner_texts())  # all of it new


@contextmanager
def signed_in(browser, studio, request, path=f"/studio/knowledge?agent={A}", ready="#concepts tbody tr"):
    """A page signed in after the test's data is in place (the `page` fixture signs in before)."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("console", lambda message: errors.append(message.text) if "Content Security Policy" in message.text else None)
    page.goto(studio.url + path)
    page.click("#signin-link")
    page.wait_for_selector(ready)
    try:
        yield page
    finally:
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"{request.node.name}.png"), full_page=True)
        context.close()
    assert errors == [], errors


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
    expect(page.locator("#version-preview")).to_contain_text("30 days of delivery")

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


# ------------------------------------------------------------------ accessible

def axe_violations(page):
    """Serious and critical axe-core violations on what the page shows now."""
    from axe_playwright_python.sync_playwright import Axe

    found = Axe().run(page).response["violations"]
    return [(v["id"], v["impact"], [n["target"] for n in v["nodes"]][:3]) for v in found
            if v["impact"] in ("serious", "critical")]


def test_no_serious_accessibility_violation_in_any_view(page, store):
    store.delete(T, A, "objecao-frete-caro", actor="operator:bia")
    assert axe_violations(page) == []
    open_concept(page, "troca-em-30-dias")
    page.click("#history")
    page.locator("#versions tbody tr").first.get_by_role("button", name="Changes").click()
    page.wait_for_selector("#diff-panel:not([hidden])")
    assert axe_violations(page) == []
    page.click("#back-from-editor")
    page.click("#show-deleted")
    page.locator("#deleted tbody tr").first.get_by_role("button", name="Preview").click()
    page.wait_for_selector("#deleted-preview:not([hidden])")
    assert axe_violations(page) == []


def focused(page):
    return page.evaluate("() => { const e = document.activeElement;"
                         " return e.id || e.dataset.name || e.dataset.sort || e.className || e.tagName; }")


def tab_to(page, wanted, key="Tab", limit=60):
    for _ in range(limit):
        if focused(page) == wanted:
            return
        page.keyboard.press(key)
    raise AssertionError(f"{wanted} never took the focus (last: {focused(page)})")


def test_keyboard_only_from_the_list_to_a_saved_edit_and_back(page, store):
    tab_to(page, "name")  # a sort button is a button: Enter sorts
    assert page.evaluate("() => document.activeElement.dataset.sort") == "name"
    page.keyboard.press("Enter")
    expect(page.locator("th", has=page.locator("button[data-sort=name]"))).to_have_attribute("aria-sort", "ascending")
    tab_to(page, "troca-em-30-dias")
    page.keyboard.press("Enter")
    expect(page.locator("#editor-title")).to_have_text("troca-em-30-dias")
    assert focused(page) == "cm-content cm-lineWrapping"  # the editor has the focus, named for a reader
    assert page.locator(".cm-content").get_attribute("aria-label") == "Concept markdown"
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("End")
    page.keyboard.type(" Sem custo.")
    page.keyboard.press("Control+s")
    expect(page.locator("#status")).to_have_text("Saved.")
    assert store.get(T, A, "troca-em-30-dias").concept.description.endswith("Sem custo.")
    tab_to(page, "back-from-editor", key="Shift+Tab")
    page.keyboard.press("Enter")
    expect(page.locator("#concepts button.link[data-name=troca-em-30-dias]")).to_be_focused()  # back where it left
    tab_to(page, "show-deleted", key="Shift+Tab")
    page.keyboard.press("Enter")
    expect(page.locator("#deleted-view")).to_be_visible()
    assert focused(page) == "deleted-title"
    tab_to(page, "back-from-deleted")
    page.keyboard.press("Enter")
    expect(page.locator("#show-deleted")).to_be_focused()


def test_browser_back_returns_the_focus_to_the_concept_left(page):
    open_concept(page, "rastreio-pedido")
    page.go_back()
    page.wait_for_selector("#list-view:not([hidden])")
    expect(page.locator("#concepts button.link[data-name=rastreio-pedido]")).to_be_focused()


def test_at_390_px_nothing_scrolls_sideways(browser, studio, request):
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    page = context.new_page()
    page.goto(f"{studio.url}/studio/knowledge?agent={A}")
    page.click("#signin-link")
    page.wait_for_selector("#concepts tbody tr")
    wide = "() => document.documentElement.scrollWidth - document.documentElement.clientWidth"
    try:
        assert page.evaluate(wide) <= 0
        assert page.evaluate("() => { const box = document.querySelector('.table-scroll');"
                             " return box.scrollWidth - box.clientWidth; }") <= 0  # every column in view
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"{request.node.name}-list.png"), full_page=True)
        page.get_by_role("button", name="troca-em-30-dias", exact=True).click()
        page.wait_for_selector(".cm-content")
        page.click("#history")
        page.locator("#versions tbody tr").first.get_by_role("button", name="Changes").click()
        page.wait_for_selector("#diff-panel:not([hidden])")
        assert page.evaluate(wide) <= 0
        assert axe_violations(page) == []
        page.screenshot(path=str(ARTIFACTS / f"{request.node.name}-editor.png"), full_page=True)
    finally:
        context.close()


# ------------------------------------------------------------------ agents

def test_the_agents_page_lists_the_tenant_s_agents_with_counts_and_opens_one(browser, studio, store, request):
    from conftest import make_concept

    store.create(T, "loja-centro", make_concept("horario-loja", description="A loja abre às 9h."), actor="engine")
    with signed_in(browser, studio, request, path="/studio/knowledge", ready="#agents tbody tr") as page:
        agents = page.locator("#agents tbody tr")
        expect(agents).to_have_count(2)
        assert agents.evaluate_all("rows => rows.map(r => r.innerText.split('\\t').map(c => c.trim()))") == [
            ["loja-centro", "1", "0", "0"], [A, "7", "1 to resolve", "0"]]
        assert axe_violations(page) == []
        page.get_by_role("link", name=A, exact=True).click()
        page.wait_for_selector("#concepts tbody tr")
        assert len(rows(page)) == 7
        page.get_by_role("link", name="All agents").click()
        expect(page.locator("#agents tbody tr")).to_have_count(2)


# ------------------------------------------------------------------ paging, search, write time

def many_concepts(store, count):
    from conftest import make_concept

    for i in range(count):
        store.create(T, A, make_concept(f"pedido-{i:03d}", description=f"Pedido número {i:03d} do lote de teste.",
                                        body=f"O pedido {i:03d} sai do CD de Campinas."), actor="engine")


def test_the_list_pages_on_the_server_and_returning_keeps_rows_scroll_and_focus(browser, studio, store, request):
    many_concepts(store, 113)
    with signed_in(browser, studio, request) as page:
        body = page.locator("#concepts tbody tr")
        expect(body).to_have_count(50)  # one page: the browser never holds all 120
        expect(page.locator("#status")).to_have_text("50 of 120 concepts")
        page.locator("#more").focus()
        page.keyboard.press("Enter")
        expect(body).to_have_count(100)
        assert page.evaluate("() => document.activeElement.dataset.name") == rows(page)[50]  # the first new row
        target = rows(page)[80]
        button = page.locator(f"#concepts button.link[data-name={target}]")
        button.scroll_into_view_if_needed()
        scrolled = page.evaluate("() => window.scrollY")
        assert scrolled > 500
        button.click()
        page.wait_for_selector(".cm-content")
        page.click("#back-from-editor")
        expect(page.locator(f"#concepts button.link[data-name={target}]")).to_be_focused()
        expect(body).to_have_count(100)
        assert abs(page.evaluate("() => window.scrollY") - scrolled) < 5


def test_search_finds_words_and_prefixes_in_name_description_and_body(page):
    page.fill("#filter-q", "reemb")
    expect(page.locator("#concepts tbody tr")).to_have_count(1)
    assert rows(page) == ["prazo-reembolso-pix"]
    page.fill("#filter-q", "original packaging")  # only in troca-em-30-dias's body
    expect(page.locator("#concepts tbody tr").first).to_have_attribute("data-name", "troca-em-30-dias")
    expect(page.locator("#concepts tbody tr")).to_have_count(1)
    assert rows(page) == ["troca-em-30-dias"]
    expect(page.locator("#concepts tbody tr td.description")).to_have_text(
        "Exchanges and returns are accepted within 30 days of delivery.")


def test_what_was_written_last_is_on_top_whatever_time_it_states(browser, studio, store, request):
    import time

    time.sleep(1.1)  # S3 stamps a write to the second
    old = store.get(T, A, "troca-em-30-dias")  # it states 2026-08-01, the oldest of all
    store.replace(T, A, old.concept.replace(occurrences=2), if_match=old.etag, actor="engine", reason="confirmed")
    with signed_in(browser, studio, request) as page:
        assert rows(page)[0] == "troca-em-30-dias"
        written = page.locator("#concepts tbody tr").first.locator("td").nth(7).inner_text()
        assert written[:4] == time.strftime("%Y", time.gmtime())


def quick(browser, studio, operator=None):
    """A signed-in page whose list looks for changes every 0.3 s instead of 30 (config.json);
    `operator` signs in another operator than the dev one (a token the authorizer signed)."""
    import json

    context = browser.new_context(viewport={"width": 1280, "height": 900})

    def quicker(route):
        answer = route.fetch()
        route.fulfill(response=answer, body=json.dumps({**answer.json(), "refreshSeconds": 0.3}))

    context.route("**/config.json", quicker)
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("console", lambda message: errors.append(message.text) if "Content Security Policy" in message.text else None)
    page.goto(f"{studio.url}/studio/knowledge?agent={A}")
    if operator is None:
        page.click("#signin-link")
    else:
        page.wait_for_selector("#signin:not([hidden])")
        token = studio.authorizer.token({"sub": operator})
        page.evaluate("token => sessionStorage.setItem('knowledge-studio-token', token)", token)
        page.reload()
    page.wait_for_selector("#concepts tbody tr")
    page.errors = errors
    return context, page


def engine_confirms(store, name):
    old = store.get(T, A, name)
    store.replace(T, A, old.concept.replace(occurrences=old.concept.occurrences + 1), if_match=old.etag,
                  actor="engine", reason="confirmed")


def new_rows(page):
    return page.locator("#concepts tbody tr", has=page.locator(".badge.new")).evaluate_all(
        "rows => rows.map(r => r.dataset.name)")


def test_what_the_engine_wrote_since_my_last_look_is_badged_counted_and_cleared_across_browsers(
        browser, studio, store, request):
    contexts = []
    try:
        contexts.append(quick(browser, studio))
        mine = contexts[0][1]
        # Never looked: what the engine wrote in the last day (all seven, seeded just now) is new.
        expect(mine).to_have_title("(7) Knowledge — studio")
        expect(mine.locator("#new-count")).to_have_text("7")
        assert len(new_rows(mine)) == 7
        mine.locator("#mark-seen").focus()
        mine.keyboard.press("Enter")
        expect(mine).to_have_title("Knowledge — studio")
        assert new_rows(mine) == [] and mine.locator("#mark-seen").is_hidden()
        expect(mine.locator("#filter-new")).to_be_focused()  # the button went away with the badges
        contexts.append(quick(browser, studio, operator="bia-operator"))
        bia = contexts[1][1]
        bia.click("#mark-seen")
        expect(bia).to_have_title("Knowledge — studio")

        engine_confirms(store, "troca-em-30-dias")  # the engine learns, after both looked
        expect(mine).to_have_title("(1) Knowledge — studio")  # the list keeps itself up to date
        expect(mine.locator("#concepts tbody tr").first).to_have_attribute("data-name", "troca-em-30-dias")
        assert new_rows(mine) == ["troca-em-30-dias"]
        expect(mine.locator("#review-since")).to_contain_text("1 concept the engine wrote since")
        mine.check("#filter-new")
        expect(mine.locator("#concepts tbody tr")).to_have_count(1)
        assert "status=new" in mine.url
        assert axe_violations(mine) == []
        ARTIFACTS.mkdir(exist_ok=True)
        mine.screenshot(path=str(ARTIFACTS / f"{request.node.name}-new.png"), full_page=True)
        mine.uncheck("#filter-new")
        expect(mine.locator("#concepts tbody tr")).to_have_count(7)

        contexts.append(quick(browser, studio))  # the same operator in another browser
        other_browser = contexts[2][1]
        expect(other_browser).to_have_title("(1) Knowledge — studio")
        assert new_rows(other_browser) == ["troca-em-30-dias"]
        mine.click("#mark-seen")
        expect(mine).to_have_title("Knowledge — studio")
        expect(other_browser).to_have_title("Knowledge — studio")  # cleared there too, without a reload
        expect(other_browser.locator("#concepts .badge.new")).to_have_count(0)
        expect(bia).to_have_title("(1) Knowledge — studio")  # another operator has not looked yet
        assert new_rows(bia) == ["troca-em-30-dias"]
    finally:
        for context, page in contexts:
            ARTIFACTS.mkdir(exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / f"{request.node.name}-{contexts.index((context, page))}.png"))
            context.close()
    assert [error for _, page in contexts for error in page.errors] == []


def test_the_list_picks_up_an_engine_write_by_itself_keeping_scroll_and_focus(browser, studio, store, request):
    from conftest import make_concept

    many_concepts(store, 60)
    context, page = quick(browser, studio)
    try:
        page.click("#mark-seen")
        expect(page).to_have_title("Knowledge — studio")
        target = rows(page)[30]
        button = page.locator(f"#concepts button.link[data-name={target}]")
        button.scroll_into_view_if_needed()
        button.focus()
        before = button.bounding_box()["y"]
        store.create(T, A, make_concept("pedido-novo", description="Pedido novo, visto agora."), actor="engine")
        expect(page.locator("#concepts tbody tr").first).to_have_attribute("data-name", "pedido-novo")
        expect(page.locator("#status")).to_contain_text("The list was updated with the latest changes")
        expect(page).to_have_title("(1) Knowledge — studio")
        expect(button).to_be_focused()  # the same concept keeps the focus
        assert abs(button.bounding_box()["y"] - before) < 5  # and its place on screen: nothing jumped
        assert len(rows(page)) == 50 and "50 of 68 concepts" in page.inner_text("#status")  # as many rows as shown
    finally:
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"{request.node.name}.png"), full_page=True)
        context.close()
    assert page.errors == []


def test_older_versions_reach_past_the_first_page_and_say_how_long_history_lasts(browser, studio, store, request):
    for _ in range(55):
        engine_confirms(store, "cep-sudeste-cd-campinas")
    with signed_in(browser, studio, request) as page:
        open_concept(page, "cep-sudeste-cd-campinas")
        page.click("#history")
        history = page.locator("#versions tbody tr")
        expect(history).to_have_count(50)  # one page: a concept confirmed thousands of times opens as fast
        expect(page.locator("#history-kept")).to_have_text(
            "Older versions are removed by the storage's lifecycle rule: it keeps the newest 20 versions and every "
            "version of the last 30 days.")
        assert page.locator("#versions tbody tr", has_text="created").count() == 0
        history.nth(49).get_by_role("button", name="Changes").click()  # its predecessor is on the next page
        expect(page.locator("#diff-label")).to_contain_text("against the one before")
        expect(history).to_have_count(56)
        expect(page.locator("#older-versions")).to_be_hidden()  # nothing older
        page.click("#back-from-editor")
        open_concept(page, "cep-sudeste-cd-campinas")
        page.click("#history")
        expect(history).to_have_count(50)
        page.locator("#older-versions").focus()
        page.keyboard.press("Enter")
        expect(history).to_have_count(56)
        created = page.locator("#versions tbody tr", has_text="created")
        expect(created).to_have_count(1)
        assert page.evaluate("() => document.activeElement.closest('tr').dataset.versionId") == \
            history.nth(50).get_attribute("data-version-id")  # focus on the first older version
        created.get_by_role("button", name="Changes").click()
        expect(page.locator("#diff-label")).to_contain_text("The first version")
        assert axe_violations(page) == []
