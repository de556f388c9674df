"""The studio page's lists in a real headless Chromium: the tenant's agents, paging on the server,
search, write time, what the engine wrote since an operator's last look, and long histories."""

from __future__ import annotations

from pathlib import Path

from helpers.browser import CHROMIUM, axe_violations, expect
from helpers.paths import ARTIFACTS, ROOT
from helpers.skips import skip_unless_present
from helpers.studio_page import A, T, open_concept, rows, signed_in

PAGE = ROOT / "studio_web" / "dist" / "index.html"
pytestmark = skip_unless_present({"Debian's chromium": Path(CHROMIUM).exists(),
                                  "the built page (./run builds it with npm)": PAGE.exists()})


# ------------------------------------------------------------------ agents

def test_the_agents_page_lists_the_tenant_s_agents_with_counts_and_opens_one(browser, studio, store, request):
    from helpers.concepts import make_concept

    store.create(T, "loja-centro", make_concept("horario-loja", description="A loja abre às 9h."), actor="engine")
    with signed_in(browser, studio, request, path="/studio/knowledge", ready="#agents tbody tr") as page:
        agents = page.locator("#agents tbody tr")
        expect(agents).to_have_count(2)
        assert agents.evaluate_all("rows => rows.map(r => r.innerText.split('\\t').map(c => c.trim()))") == [
            ["loja-centro", "1", "0", "0", "1 to review"], [A, "7", "1 to resolve", "0", "7 to review"]]
        assert axe_violations(page) == []
        page.get_by_role("link", name=A, exact=True).click()
        page.wait_for_selector("#concepts tbody tr")
        assert len(rows(page)) == 7
        page.get_by_role("link", name="All agents").click()
        expect(page.locator("#agents tbody tr")).to_have_count(2)


# ------------------------------------------------------------------ paging, search, write time

def many_concepts(store, count):
    from helpers.concepts import make_concept

    for i in range(count):
        store.create(T, A, make_concept(f"pedido-{i:03d}", description=f"Pedido número {i:03d} do lote de teste.",
                                        body=f"O pedido {i:03d} sai do CD de Campinas."), actor="engine")


def test_the_list_pages_on_the_server_and_returning_keeps_rows_scroll_and_focus(browser, studio, store, request):
    many_concepts(store, 113)
    with signed_in(browser, studio, request) as page:
        body = page.locator("#concepts tbody tr")
        expect(body).to_have_count(50)  # one page: the browser never holds all 120
        # On a busy machine the first answers may not have read all 113 writes yet: the list says so,
        # reads on by itself, and says the whole count once it has.
        expect(page.locator("#catching-up")).to_be_hidden(timeout=60_000)
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
    page.fill("#filter-q", "embalagem original")  # only in troca-em-30-dias's body
    expect(page.locator("#concepts tbody tr").first).to_have_attribute("data-name", "troca-em-30-dias")
    expect(page.locator("#concepts tbody tr")).to_have_count(1)
    assert rows(page) == ["troca-em-30-dias"]
    description = page.locator("#concepts tbody tr td.description")
    expect(description).to_contain_text("Trocas e devoluções são aceitas em até 30 dias após a entrega.")
    # Found in the body only: a snippet of the body under the description, the words marked.
    expect(description.locator(".snippet")).to_contain_text("na embalagem original")
    expect(description.locator(".snippet mark")).to_have_text(["embalagem", "original"])


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
        expect(mine.locator("#review-since")).to_contain_text("1 concept the engine or a colleague wrote since")
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
    from helpers.concepts import make_concept

    many_concepts(store, 60)
    context, page = quick(browser, studio)
    try:
        page.click("#mark-seen")
        expect(page).to_have_title("Knowledge — studio")
        # The title changes while the list is listed again; its rows are the new ones once this is said.
        expect(page.locator("#status")).to_contain_text("Marked all as seen")
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
