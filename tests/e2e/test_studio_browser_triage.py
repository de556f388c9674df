"""The studio page's list as an operator works it, in a real headless Chromium: every filter alone
and combined and kept in the URL (reload, Back, Forward), the list saying when it could not update
itself, the way in from sign-in, and the review queue triaged one concept at a time."""

from __future__ import annotations

from pathlib import Path

from helpers.browser import CHROMIUM, axe_violations, expect
from helpers.paths import ROOT
from helpers.skips import skip_unless_present
from helpers.studio_page import A, T, rows, signed_in

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

def quick(browser, studio):
    """A signed-in page whose list looks for changes every 0.3 s instead of 30 (config.json)."""
    import json

    context = browser.new_context(viewport={"width": 1280, "height": 900})

    def quicker(route):
        answer = route.fetch()
        route.fulfill(response=answer, body=json.dumps({**answer.json(), "refreshSeconds": 0.3}))

    context.route("**/config.json", quicker)
    page = context.new_page()
    page.goto(f"{studio.url}/studio/knowledge?agent={A}")
    page.click("#signin-link")
    page.wait_for_selector("#concepts tbody tr")
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
    expect(page.locator("#editor-meta")).to_have_text("Promote observed to policy by editing the provenance line.")
    assert store.get(T, A, "horario-sac").concept.provenance == "policy"


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
