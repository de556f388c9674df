"""The Facts page in a real headless Chromium (Debian's, driven by Playwright), against the real
FactsApiFunction handler behind the local authorizer, on moto. Proposals come from the real
DistillFunction (scripted model server); what an approval writes is read back through the real
MemoryFunction, as the engine reads it. Screenshots go to test-artifacts/."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from helpers.browser import CHROMIUM, expect, signed_in_page
from helpers.facts_page import CONFIG, CUSTOMER, KEY, PIX, SHOE, conversation
from helpers.handlers import LambdaContext, load_event, load_handler
from helpers.paths import ROOT
from helpers.skips import skip_unless_present

from facts.cells import MemoryCells
from facts.keys import FactKeys

T, A = "default", "store-support"
PAGE = ROOT / "studio_web" / "dist" / "facts.html"
pytestmark = skip_unless_present({"Debian's chromium": Path(CHROMIUM).exists(),
                                  "the built page (./run builds it with npm)": PAGE.exists()})


@pytest.fixture
def env(s3, bucket, sessions_bucket, bus, model):
    s3.put_object(Bucket=bucket, Key=f"agents/{T}/{A}/knowledge.yaml", Body=CONFIG.encode())
    return dict(KNOWLEDGE_BUCKET=bucket, SESSIONS_BUCKET=sessions_bucket, EVENT_BUS_NAME=bus["name"],
                UTILITY_MODEL="openai:distiller", OPENAI_BASE_URL=model.base_url, FACTS_KEY=KEY,
                POWERTOOLS_LOG_LEVEL="WARNING")


@pytest.fixture
def proposed(monkeypatch, env, s3, sessions_bucket, script):
    """Ana's shoe size and payment, proposed by DistillFunction from an idle conversation."""
    conversation(s3, sessions_bucket, "sess_troca_01")
    script.replies = [json.dumps([SHOE, PIX])]
    report = load_handler("distill", monkeypatch, **env).lambda_handler(load_event("distill.json"), LambdaContext())
    assert report["proposed"] == 2, report


@pytest.fixture
def studio(monkeypatch, env, proposed):
    from knowledge_dev.studio_server import LocalAuthorizer, StudioServer

    service = f"studio-{uuid.uuid4().hex[:6]}"
    knowledge = load_handler("studio_api", monkeypatch, **env, POWERTOOLS_SERVICE_NAME=service)
    facts = load_handler("facts_api", monkeypatch, **env, POWERTOOLS_SERVICE_NAME=f"facts-{service}")
    server = StudioServer(knowledge.lambda_handler, LocalAuthorizer(issuer="http://127.0.0.1/dev"),
                          context_factory=LambdaContext, facts_handler=facts.lambda_handler).start()
    monkeypatch.setenv("STUDIO_ORIGIN", server.url)
    yield server
    server.stop()


@pytest.fixture
def memory(monkeypatch, env):
    handler = load_handler("memory", monkeypatch, **env)
    return lambda: {f["name"]: (f["value"], f["origin"]) for f in handler.lambda_handler(
        {"action": "read", "tenant": T, "customer_id": CUSTOMER}, LambdaContext())["facts"]}


@pytest.fixture
def page(browser, studio, request):
    with signed_in_page(browser, f"{studio.url}/studio/facts?agent={A}", "#pending-list .card",
                        f"facts-{request.node.name}.png") as page:
        yield page


def card(page, name, where="#pending-list"):
    return page.locator(f"{where} .card", has=page.locator(".fact-name", has_text=name))


def latched(s3, bucket, name, value) -> bool:
    key = f"memory/{T}/{CUSTOMER}/latch/{FactKeys(KEY).tuple_id(T, CUSTOMER, name, value)}"
    return s3.list_objects_v2(Bucket=bucket, Prefix=key).get("KeyCount") == 1


def test_pending_cards_show_the_fact_its_scope_confidence_and_redacted_evidence(page):
    shoe = card(page, "tamanho_calcado")
    expect(shoe.locator("h3")).to_have_text("tamanho_calcado: 43")
    expect(shoe.locator(".meta")).to_contain_text("80%")
    expect(shoe.locator(".meta")).to_contain_text(f"{T}:{CUSTOMER}")
    expect(shoe.locator("blockquote")).to_have_count(2)
    expect(shoe.locator("blockquote").nth(1)).to_contain_text("Customer: pode ser 43 sim")
    expect(shoe.locator("blockquote").nth(1)).to_contain_text("[email]")
    assert "ana.souza@gmail.com" not in page.content()
    for label in ("Approve & save to memory", "Reject", "Dismiss — will not be proposed again"):
        expect(shoe.get_by_role("button", name=label, exact=True)).to_be_visible()
    expect(page.locator("#pending-count")).to_have_text("(2)")


def test_approve_saves_to_the_memory_the_engine_reads(page, memory):
    assert memory() == {}
    card(page, "tamanho_calcado").get_by_role("button", name="Approve & save to memory").click()
    expect(page.locator("#status")).to_have_text(f"Saved to memory: tamanho_calcado = “43” for {T}:{CUSTOMER}.")
    expect(card(page, "tamanho_calcado")).to_have_count(0)
    assert memory() == {"tamanho_calcado": ("43", "distilled:sess_troca_01")}
    row = page.locator("#recent tbody tr", has_text="tamanho_calcado")
    expect(row).to_contain_text("Approved, saved to memory")
    expect(row).to_contain_text("dev-operator")


def test_reject_with_a_reason_shows_it_and_latches_the_value(page, memory, s3, bucket):
    pix = card(page, "pagamento_preferido")
    pix.get_by_role("button", name="Reject", exact=True).click()
    reason = pix.get_by_label("Reason (optional, shown with the decision)")
    expect(reason).to_be_focused()
    reason.fill("cliente pediu cartão na última compra")
    pix.get_by_role("button", name="Confirm rejection").click()
    expect(page.locator("#status")).to_contain_text("Rejected pagamento_preferido")
    row = page.locator("#recent tbody tr", has_text="pagamento_preferido")
    expect(row).to_contain_text("Rejected")
    expect(row).to_contain_text("cliente pediu cartão na última compra")
    assert memory() == {} and latched(s3, bucket, "pagamento_preferido", "Pix")


def test_dismiss_says_it_will_not_be_proposed_again_and_latches(page, memory, s3, bucket):
    card(page, "pagamento_preferido").get_by_role("button", name="Dismiss — will not be proposed again").click()
    expect(page.locator("#status")).to_have_text("Dismissed pagamento_preferido = “Pix”: it will not be proposed again.")
    expect(page.locator("#recent tbody tr", has_text="pagamento_preferido")).to_contain_text("Dismissed")
    assert memory() == {} and latched(s3, bucket, "pagamento_preferido", "Pix")


def test_an_approval_after_an_operator_edit_goes_stale_with_both_values_and_is_dismissed(
        page, memory, s3, bucket):
    MemoryCells(s3, bucket).write_fact(T, CUSTOMER, "tamanho_calcado", "44", "operator")
    card(page, "tamanho_calcado").get_by_role("button", name="Approve & save to memory").click()
    expect(page.locator("#status")).to_contain_text("Nothing was saved: tamanho_calcado changed")
    stale = card(page, "tamanho_calcado", "#stale-list")
    expect(stale.locator("del")).to_have_text("43")
    expect(stale.locator(".current-value")).to_have_text("44")
    expect(stale).to_contain_text("set by an operator")
    assert stale.locator("del").evaluate("e => getComputedStyle(e).textDecorationLine") == "line-through"
    assert memory() == {"tamanho_calcado": ("44", "operator")}
    stale.get_by_role("button", name="Dismiss — will not be proposed again").click()
    expect(card(page, "tamanho_calcado", "#stale-list")).to_have_count(0)
    expect(page.locator("#stale-empty")).to_be_visible()
    assert memory() == {"tamanho_calcado": ("44", "operator")}


def test_approve_and_reject_with_the_keyboard_only(page, memory):
    page.locator("body").focus()
    for _ in range(40):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.textContent") == "Approve & save to memory":
            break
    else:
        pytest.fail("Tab never reached an approve button")
    first = page.evaluate("document.activeElement.closest('.card').querySelector('.fact-name').textContent")
    page.keyboard.press("Enter")
    expect(page.locator("#status")).to_contain_text(f"Saved to memory: {first}")
    assert first in memory()
    # Focus moved on to the next card, so the next decision is one key away.
    expect(page.locator("#pending-list .card")).to_have_count(1, timeout=20_000)
    expect(page.locator("#pending-list .card button.approve")).to_be_focused()
    # And a rejection with its reason: Tab to Reject, Enter, type, Enter (Escape would close the field).
    page.keyboard.press("Tab")
    page.keyboard.press("Enter")
    expect(page.locator("#pending-list .reason-text")).to_be_focused()
    page.keyboard.type("cliente corrigiu depois")
    page.keyboard.press("Enter")
    expect(page.locator("#recent tbody tr", has_text="cliente corrigiu depois")).to_have_count(1)
    expect(page.locator("#pending-title")).to_be_focused()  # nothing left to decide: the list's heading


def test_when_the_api_is_down_the_page_says_so_in_plain_words_and_try_again_works(page, memory):
    page.route("**/api/**", lambda route: route.abort())
    card(page, "tamanho_calcado").get_by_role("button", name="Approve & save to memory").click()
    expect(page.locator("#problem-text")).to_have_text(
        "Could not approve tamanho_calcado: the studio could not reach the service. Check the connection, then try again.")
    assert memory() == {}
    page.unroute("**/api/**")
    page.locator("#problem").get_by_role("button", name="Try again").click()
    expect(page.locator("#status")).to_contain_text("Saved to memory: tamanho_calcado")
    expect(page.locator("#problem")).to_be_hidden()
    assert "tamanho_calcado" in memory()

    page.route("**/api/**", lambda route: route.fulfill(status=503, content_type="text/html", body="<html>down</html>"))
    page.reload()
    expect(page.locator("#problem-text")).to_have_text(
        "Could not load the proposals: the service could not answer just now (HTTP 503). Try again in a moment.")
    page.unroute("**/api/**")
    page.click("#problem-retry")
    expect(page.locator("#recent tbody tr")).to_have_count(1)


def test_an_operator_edits_a_fact_in_the_customers_memory(page, memory, s3, bucket):
    card(page, "tamanho_calcado").get_by_role("button", name="Open this customer's memory").first.click()
    expect(page.locator("#memory-title")).to_have_text(f"Memory of {T}:{CUSTOMER}")
    expect(page.locator("#memory-title")).to_be_focused()
    expect(page.locator("#memory-empty")).to_be_visible()
    page.get_by_label("New fact").fill("tamanho_calcado")
    page.get_by_label("Value").fill("42")
    page.get_by_role("button", name="Add to memory").click()
    expect(page.locator("#status")).to_have_text(f"Saved tamanho_calcado = “42” to {CUSTOMER}'s memory.")
    assert memory() == {"tamanho_calcado": ("42", "operator")}
    # Someone else changes it while this page shows 42: saving over it is refused, in plain words.
    MemoryCells(s3, bucket).write_fact(T, CUSTOMER, "tamanho_calcado", "41", "engine")
    page.get_by_role("button", name="Edit tamanho_calcado").click()
    page.get_by_label("New value of tamanho_calcado").fill("43")
    page.keyboard.press("Enter")
    expect(page.locator("#problem-text")).to_have_text(
        "Nothing was saved for tamanho_calcado: someone changed this fact after you opened it: it now reads “41”. "
        "Edit it again if it still needs your change.")
    expect(page.locator("#memory tbody tr")).to_contain_text("41")
    assert memory() == {"tamanho_calcado": ("41", "engine")}
    page.click("#back-to-proposals")
    expect(page.locator("#pending-title")).to_be_focused()


def test_the_pages_link_to_each_other(page, studio):
    link = page.get_by_role("link", name="Knowledge")
    assert link.get_attribute("href") == f"knowledge?tenant={T}&agent={A}"


def test_no_serious_accessibility_violation(page, s3, bucket):
    from helpers.browser import axe_violations

    MemoryCells(s3, bucket).write_fact(T, CUSTOMER, "tamanho_calcado", "44", "operator")
    card(page, "tamanho_calcado").get_by_role("button", name="Approve & save to memory").click()
    expect(card(page, "tamanho_calcado", "#stale-list")).to_have_count(1)
    expect(page.locator("#pending-list .card")).to_have_count(1)
    card(page, "pagamento_preferido").get_by_role("button", name="Reject", exact=True).click()
    assert axe_violations(page) == []  # pending (with its reason field), stale, the list of decisions
    page.get_by_role("button", name="Confirm rejection").click()
    expect(page.locator("#recent tbody tr")).to_have_count(1)
    assert axe_violations(page) == []
    card(page, "tamanho_calcado", "#stale-list").get_by_role("button", name="Open this customer's memory").click()
    expect(page.locator("#memory tbody tr")).to_have_count(1)
    assert axe_violations(page) == []
    page.set_viewport_size({"width": 390, "height": 800})
    page.click("#back-to-proposals")
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    assert axe_violations(page) == []


def _outside_cell(count: int) -> bytes:
    """A cell written outside the engine with `count` facts, fact_00000 the oldest."""
    facts = {f"fact_{i:05d}": {"value": f"valor {i}", "origin": "legacy",
                               "at": f"2026-03-01T00:{i // 60:02d}:{i % 60:02d}.000000Z", "revision": i + 1}
             for i in range(count)}
    return json.dumps({"v": 1, "tenant": T, "customer_id": CUSTOMER, "seq": count, "facts": facts}).encode()


def _open_memory(page):
    page.get_by_label("Customer id", exact=True).fill(CUSTOMER)
    page.get_by_role("button", name="Open memory").click()
    expect(page.locator("#memory-title")).to_be_focused()


def test_an_over_full_memory_says_what_is_served_and_the_operator_removes_the_rest(page, memory, s3, bucket):
    from helpers.browser import axe_violations

    from facts import layout

    s3.put_object(Bucket=bucket, Key=layout.cell_key(T, CUSTOMER), Body=_outside_cell(250))
    _open_memory(page)
    expect(page.locator("#memory-over-full-text")).to_contain_text(
        "this cell holds 250 facts, over the 200 a customer may have")
    expect(page.locator("#memory tbody tr")).to_have_count(200)
    assert axe_violations(page) == []
    page.get_by_role("button", name="Remove the facts not served").click()
    expect(page.locator("#status")).to_have_text("Removed 50 facts that were not served; 200 remain.")
    expect(page.locator("#memory-over-full")).to_be_hidden()
    page.get_by_role("button", name="Remove fact_00249").click()
    expect(page.locator("#status")).to_have_text(f"Removed fact_00249 from {CUSTOMER}'s memory.")
    expect(page.locator("#memory tbody tr")).to_have_count(199)
    assert set(memory()) == {f"fact_{i:05d}" for i in range(50, 249)}


def test_an_unreadable_memory_offers_restore_and_a_confirmed_reset(page, memory, s3, bucket):
    from helpers.browser import axe_violations

    from facts import layout

    MemoryCells(s3, bucket).write_fact(T, CUSTOMER, "tamanho_calcado", "42", "operator")
    s3.put_object(Bucket=bucket, Key=layout.cell_key(T, CUSTOMER), Body=b"{broken")
    _open_memory(page)
    expect(page.locator("#memory-repair-text")).to_contain_text("does not follow the format")
    expect(page.locator("#memory-facts")).to_be_hidden()
    assert axe_violations(page) == []
    page.get_by_role("button", name="Restore the last readable version").click()
    expect(page.locator("#status")).to_have_text(f"Restored {CUSTOMER}'s memory to its last readable version (1 fact).")
    expect(page.locator("#memory tbody tr")).to_contain_text("42")
    assert memory() == {"tamanho_calcado": ("42", "operator")}

    s3.put_object(Bucket=bucket, Key=layout.cell_key(T, CUSTOMER), Body=b"{broken again")
    page.click("#back-to-proposals")
    _open_memory(page)
    page.get_by_label("Or type the customer id to reset this memory to empty").fill("someone-else")
    page.get_by_role("button", name="Reset to empty").click()
    expect(page.locator("#problem-text")).to_contain_text("Could not reset this memory: confirm: type the customer id")
    page.get_by_label("Or type the customer id to reset this memory to empty").fill(CUSTOMER)
    page.get_by_role("button", name="Reset to empty").click()
    expect(page.locator("#status")).to_have_text(f"{CUSTOMER}'s memory was reset to empty.")
    expect(page.locator("#memory-empty")).to_be_visible()
    assert memory() == {}
