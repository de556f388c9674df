"""The studio page's list as an operator works it, in a real headless Chromium: every filter alone
and combined and kept in the URL (reload, Back, Forward), the list saying when it could not update
itself, the way in from sign-in, and the review queue triaged one concept at a time."""

from __future__ import annotations

from pathlib import Path

from helpers.browser import CHROMIUM, axe_violations, expect
from helpers.paths import ROOT
from helpers.skips import skip_unless_present
from helpers.studio_page import A, T, open_concept, rows, signed_in

PAGE = ROOT / "studio_web" / "dist" / "index.html"
pytestmark = skip_unless_present({"Debian's chromium": Path(CHROMIUM).exists(),
                                  "the built page (./run builds it with npm)": PAGE.exists()})

FACTS = ["cep-sudeste-cd-campinas", "parcelamento-sem-juros-10x", "prazo-reembolso-pix"]


def listed(page, count):
    expect(page.locator("#concepts tbody tr")).to_have_count(count)
    return rows(page)


# ------------------------------------------------------------------ filters, alone and combined, in the URL

def test_the_type_filter_lists_that_type_alone_and_says_nothing_went_wrong(page):
    page.select_option("#filter-type", "fact")
    assert sorted(listed(page, 3)) == FACTS
    expect(page.locator("#problem")).to_be_hidden()
    expect(page.locator("#status")).to_have_text("3 concepts")
    assert "type=fact" in page.url
    page.select_option("#filter-type", "objection")
    assert listed(page, 1) == ["objecao-frete-caro"]
    page.select_option("#filter-type", "")
    listed(page, 7)
    assert "type=" not in page.url


def test_filters_combine_and_the_url_keeps_them_through_reload_back_and_forward(page):
    page.select_option("#filter-type", "fact")
    listed(page, 3)
    page.check("#filter-conflict")
    assert listed(page, 1) == ["prazo-reembolso-pix"]
    page.uncheck("#filter-conflict")
    listed(page, 3)
    page.click("th button[data-sort=name]")  # sorted A to Z, within the type
    expect(page.locator("th", has=page.locator("button[data-sort=name]"))).to_have_attribute("aria-sort", "ascending")
    assert rows(page) == FACTS
    page.fill("#filter-q", "reembolso")
    assert listed(page, 1) == ["prazo-reembolso-pix"]
    assert "type=fact" in page.url and "q=reembolso" in page.url and "sort=name" in page.url and "order=asc" in page.url

    page.reload()
    assert listed(page, 1) == ["prazo-reembolso-pix"]  # the same list, its controls as they were
    expect(page.locator("#filter-type")).to_have_value("fact")
    expect(page.locator("#filter-q")).to_have_value("reembolso")
    expect(page.locator("th", has=page.locator("button[data-sort=name]"))).to_have_attribute("aria-sort", "ascending")

    page.go_back()  # before the search: facts by name
    assert listed(page, 3) == FACTS
    expect(page.locator("#filter-q")).to_have_value("")
    page.go_back()  # before sorting: facts, last written first
    expect(page.locator("th", has=page.locator("button[data-sort=written_at]"))).to_have_attribute(
        "aria-sort", "descending")
    page.go_back()  # facts in conflict
    assert listed(page, 1) == ["prazo-reembolso-pix"]
    expect(page.locator("#filter-conflict")).to_be_checked()
    page.go_back()
    page.go_back()  # the whole list
    listed(page, 7)
    expect(page.locator("#filter-type")).to_have_value("")
    page.go_forward()
    assert sorted(listed(page, 3)) == FACTS
    expect(page.locator("#filter-type")).to_have_value("fact")
    expect(page.locator("#problem")).to_be_hidden()


def test_a_concept_opened_from_a_filtered_list_returns_to_that_list(page):
    page.select_option("#filter-type", "policy")
    assert sorted(listed(page, 2)) == ["frete-gratis-acima-199", "troca-em-30-dias"]
    page.get_by_role("button", name="troca-em-30-dias", exact=True).click()
    page.wait_for_selector(".cm-content")
    assert "type=policy" in page.url and "concept=troca-em-30-dias" in page.url
    page.go_back()
    assert sorted(listed(page, 2)) == ["frete-gratis-acima-199", "troca-em-30-dias"]
    expect(page.locator("#filter-type")).to_have_value("policy")


def test_a_link_with_filters_opens_that_list(browser, studio, request):
    with signed_in(browser, studio, request, path=f"/studio/knowledge?agent={A}&type=policy&q=frete") as page:
        assert listed(page, 1) == ["frete-gratis-acima-199"]
        expect(page.locator("#filter-type")).to_have_value("policy")
        expect(page.locator("#filter-q")).to_have_value("frete")
        assert axe_violations(page) == []


# ------------------------------------------------------------------ the smaller things an operator meets

def quick(browser, studio, operator=None, path=f"/studio/knowledge?agent={A}", ready="#concepts tbody tr"):
    """A signed-in page whose list looks for changes every 0.3 s instead of 30 (config.json);
    `operator` signs in another operator than the dev one (a token the authorizer signed)."""
    import json

    context = browser.new_context(viewport={"width": 1280, "height": 900})

    def quicker(route):
        answer = route.fetch()
        route.fulfill(response=answer, body=json.dumps({**answer.json(), "refreshSeconds": 0.3}))

    context.route("**/config.json", quicker)
    page = context.new_page()
    page.errors = []
    page.on("pageerror", lambda error: page.errors.append(str(error)))
    page.goto(studio.url + path)
    if operator is None:
        page.click("#signin-link")
    else:
        page.wait_for_selector("#signin:not([hidden])")
        page.evaluate("token => sessionStorage.setItem('knowledge-studio-token', token)",
                      studio.authorizer.token({"sub": operator}))
        page.reload()
    page.wait_for_selector(ready)
    return context, page


def test_an_open_list_says_so_when_it_cannot_update_itself_and_clears_once_it_can(browser, studio, store):
    from helpers.concepts import make_concept

    context, page = quick(browser, studio)
    try:
        stale = page.locator("#list-stale")
        expect(stale).to_be_hidden()
        context.route("**/tenants/**", lambda route: route.abort())  # the API is down
        expect(stale).to_be_visible()
        expect(stale).to_contain_text("This list may be out of date: it could not be updated since ")
        expect(stale).to_contain_text("UTC (the studio could not reach the service")
        listed(page, 7)  # the rows stay, said to be as they were
        context.unroute("**/tenants/**")
        store.create(T, A, make_concept("pedido-novo", description="Pedido novo, visto agora."), actor="engine")
        expect(page.locator("#concepts tbody tr").first).to_have_attribute("data-name", "pedido-novo")
        expect(stale).to_be_hidden()
    finally:
        context.close()


def test_after_creating_a_concept_the_hint_for_new_ones_is_gone(page, store):
    page.click("#new-concept")
    expect(page.locator("#editor-meta")).to_have_text("Fields you leave out are filled in: provenance policy, no sources.")
    page.locator(".cm-content").click()
    page.keyboard.press("Control+a")
    page.keyboard.type("---\nname: horario-sac\ndescription: O SAC atende das 8h às 20h.\ntype: fact\n---\n\nDas 8h às 20h.\n")
    page.click("#save")
    expect(page.locator("#status")).to_have_text("Saved.")
    expect(page.locator("#editor-title")).to_have_text("horario-sac")
    expect(page.locator("#editor-meta")).to_have_text("")  # a policy: nothing to promote
    assert store.get(T, A, "horario-sac").concept.provenance == "policy"


def test_the_promote_hint_shows_on_an_observed_concept_and_goes_once_it_is_a_policy(page, store):
    observed = next(s.concept.name for s in store.load_all(T, A) if s.concept.provenance == "observed")
    open_concept(page, observed)
    expect(page.locator("#editor-meta")).to_have_text("Promote observed to policy by editing the provenance line.")
    page.locator(".cm-line", has_text="provenance: observed").click()
    page.keyboard.press("End")
    for _ in "observed":
        page.keyboard.press("Backspace")
    page.keyboard.type("policy")
    page.keyboard.press("Control+s")
    expect(page.locator("#status")).to_have_text("Saved.")
    expect(page.locator("#editor-meta")).to_have_text("")


def test_every_time_the_page_shows_says_it_is_utc(page):
    for sort in ("updated_at", "written_at"):  # the list's time columns say it once, in their heading
        assert "(UTC)" in page.locator(f"th button[data-sort={sort}]").inner_text()
    expect(page.locator("#review-since")).to_contain_text(" UTC")
    page.get_by_role("button", name="troca-em-30-dias", exact=True).click()
    page.click("#history")
    when = page.locator("#versions tbody tr").first.locator("td").first
    expect(when).to_have_text(__import__("re").compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$"))


def test_the_knowledge_page_links_to_facts_for_the_same_agent(page, studio):
    link = page.get_by_role("link", name="Facts", exact=True)
    expect(link).to_have_attribute("href", f"facts?tenant={T}&agent={A}")
    link.click()
    page.wait_for_url(f"{studio.url}/studio/facts?tenant={T}&agent={A}")


def test_after_sign_in_the_keyboard_starts_on_the_first_concept_and_a_skip_link_leads_back_there(page):
    first = rows(page)[0]
    assert page.evaluate("() => document.activeElement.dataset.name") == first
    page.click("header h1")
    page.keyboard.press("Shift+Tab")  # before the header: the page's first stop
    assert page.evaluate("() => document.querySelector('a[href], button, input, select').id") == "skip-to-list"
    skip = page.get_by_role("link", name="Skip to the concepts")
    expect(skip).to_be_focused()
    expect(skip).to_be_in_viewport()
    page.keyboard.press("Enter")
    assert page.evaluate("() => document.activeElement.dataset.name") == first


# ------------------------------------------------------------------ the review queue, triaged

def new_rows(page):
    return page.locator("#concepts tbody tr", has=page.locator(".badge.new")).evaluate_all(
        "rows => rows.map(r => r.dataset.name)")


def why(page, name):
    return page.locator(f"#concepts tbody tr[data-name={name}] td .why").inner_text()


def engine_writes(store, name, reason):
    old = store.get(T, A, name)
    store.replace(T, A, old.concept.replace(occurrences=old.concept.occurrences + 1), if_match=old.etag,
                  actor="engine", reason=reason)


def test_each_row_says_why_and_by_whom_and_a_colleague_s_edit_is_new_to_me_but_not_to_them(browser, studio, store):
    contexts = []
    try:
        contexts.append(quick(browser, studio))
        mine = contexts[0][1]
        mine.click("#mark-seen")
        expect(mine).to_have_title("Knowledge — studio")
        contexts.append(quick(browser, studio, operator="bia-operator"))
        bia = contexts[1][1]
        bia.click("#mark-seen")
        expect(bia).to_have_title("Knowledge — studio")
        engine_writes(store, "cep-sudeste-cd-campinas", "merged")
        engine_writes(store, "prazo-reembolso-pix", "contradiction")
        engine_writes(store, "troca-em-30-dias", "kept_beside")
        # Bia edits a concept in her browser, as an operator does.
        bia.get_by_role("button", name="rastreio-pedido", exact=True).click()
        bia.wait_for_selector(".cm-content")
        bia.locator(".cm-line", has_text="description:").first.click()
        bia.keyboard.press("End")
        bia.keyboard.type(" Pelo site.")
        bia.keyboard.press("Control+s")
        expect(bia.locator("#status")).to_have_text("Saved.")
        bia.click("#back-from-editor")

        expect(mine).to_have_title("(4) Knowledge — studio")  # the list keeps itself up to date
        assert sorted(new_rows(mine)) == ["cep-sudeste-cd-campinas", "prazo-reembolso-pix", "rastreio-pedido",
                                          "troca-em-30-dias"]
        assert why(mine, "cep-sudeste-cd-campinas") == "merged by the engine"
        assert why(mine, "prazo-reembolso-pix") == "contradiction by the engine"
        assert why(mine, "troca-em-30-dias") == "kept beside by the engine"
        assert why(mine, "rastreio-pedido") == "edited by operator:bia-operator"  # a colleague's edit: new to me
        assert why(mine, "frete-gratis-acima-199") == "created by the engine"
        expect(bia).to_have_title("(3) Knowledge — studio")
        expect(bia.locator("#concepts tbody tr[data-name=rastreio-pedido] td .why")).to_have_text("edited by you")
        assert "rastreio-pedido" not in new_rows(bia)  # her own edit is not new to her
        assert axe_violations(mine) == []
    finally:
        for context, _ in contexts:
            context.close()
    assert [error for _, page in contexts for error in page.errors] == []


def test_marking_one_concept_reviewed_takes_it_out_of_my_queue_until_it_is_written_again(browser, studio, store):
    context, page = quick(browser, studio)
    try:
        expect(page).to_have_title("(7) Knowledge — studio")
        row = page.locator("#concepts tbody tr[data-name=troca-em-30-dias]")
        row.get_by_role("button", name="Mark reviewed: troca-em-30-dias").click()
        expect(page).to_have_title("(6) Knowledge — studio")
        expect(row.locator(".badge.new")).to_have_count(0)
        expect(page.locator("#new-count")).to_have_text("6")
        expect(page.locator("#status")).to_contain_text("troca-em-30-dias marked reviewed. 6 new left")
        page.reload()
        page.wait_for_selector("#concepts tbody tr")
        expect(page).to_have_title("(6) Knowledge — studio")  # kept on the server
        assert "troca-em-30-dias" not in new_rows(page)
        engine_writes(store, "troca-em-30-dias", "confirmed")
        expect(page).to_have_title("(7) Knowledge — studio")  # a later version is new again
        expect(page.locator("#concepts tbody tr[data-name=troca-em-30-dias] .badge.new")).to_have_count(1)
    finally:
        context.close()
    assert page.errors == []


def test_the_queue_is_worked_through_from_the_keyboard_with_the_keys_said_on_the_page(page):
    hint = page.locator("#keys-hint")
    expect(hint).to_be_visible()
    expect(hint).to_have_text("In the list: j next, k previous, n next new, r mark reviewed, Enter open.")
    names = rows(page)
    focused = "() => document.activeElement.closest('tr') && document.activeElement.closest('tr').dataset.name"
    assert page.evaluate(focused) == names[0]  # signed in: on the first concept
    page.keyboard.press("j")
    assert page.evaluate(focused) == names[1]
    page.keyboard.press("j")
    page.keyboard.press("k")
    assert page.evaluate(focused) == names[1]
    page.keyboard.press("r")  # reviewed, and on to the next new one
    expect(page.locator(f"#concepts tbody tr[data-name={names[1]}] .badge.new")).to_have_count(0)
    expect(page).to_have_title("(6) Knowledge — studio")
    assert page.evaluate(focused) == names[2]
    page.keyboard.press("r")
    expect(page).to_have_title("(5) Knowledge — studio")
    assert page.evaluate(focused) == names[3]
    page.keyboard.press("k")
    page.keyboard.press("k")
    page.keyboard.press("n")  # the next one still new, past the two reviewed
    assert page.evaluate(focused) == names[3]
    page.keyboard.press("Enter")
    page.wait_for_selector(".cm-content")
    expect(page.locator("#editor-title")).to_have_text(names[3])
    page.click("#back-from-editor")
    page.fill("#filter-q", "jk")  # letters typed elsewhere are text, not keys
    expect(page.locator("#filter-q")).to_have_value("jk")
    assert axe_violations(page) == []


def test_mark_all_as_seen_can_be_undone(page):
    page.locator("#concepts tbody tr[data-name=troca-em-30-dias]").get_by_role(
        "button", name="Mark reviewed: troca-em-30-dias").click()
    expect(page).to_have_title("(6) Knowledge — studio")
    page.click("#mark-seen")
    expect(page).to_have_title("Knowledge — studio")
    expect(page.locator("#status")).to_contain_text("Marked all as seen. Undo puts the new marks back.")
    undo = page.get_by_role("button", name="Undo mark all as seen")
    undo.focus()
    page.keyboard.press("Enter")
    expect(page).to_have_title("(6) Knowledge — studio")  # as before the mark: the one reviewed stays reviewed
    expect(page.locator("#status")).to_contain_text("Undone: 6 concepts are new again.")
    expect(undo).to_be_hidden()  # once
    assert "troca-em-30-dias" not in new_rows(page) and len(new_rows(page)) == 6


def test_the_agents_page_counts_what_is_new_for_me(browser, studio, store):
    from helpers.concepts import make_concept

    store.create(T, "loja-centro", make_concept("horario-loja", description="A loja abre às 9h."), actor="engine")
    context, page = quick(browser, studio)
    try:
        page.click("#mark-seen")
        expect(page).to_have_title("Knowledge — studio")
        engine_writes(store, "rastreio-pedido", "confirmed")
        page.get_by_role("link", name="All agents").click()
        agents = page.locator("#agents tbody tr")
        expect(agents).to_have_count(2)
        expect(page.locator("#agents thead")).to_contain_text("New for you")
        assert agents.evaluate_all("rows => rows.map(r => r.innerText.split('\\t').map(c => c.trim()))") == [
            ["loja-centro", "1", "0", "0", "1 to review"], [A, "7", "1 to resolve", "0", "1 to review"]]
        assert axe_violations(page) == []
    finally:
        context.close()
    assert page.errors == []
