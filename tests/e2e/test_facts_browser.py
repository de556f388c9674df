"""The Facts page in a real headless Chromium (Debian's, driven by Playwright), against the real
FactsApiFunction handler behind the local authorizer, on moto. Proposals come from the real
DistillFunction (scripted model server); what an approval writes is read back through the real
MemoryFunction, as the engine reads it. Screenshots go to test-artifacts/.

Over 500 lines on purpose: every walkthrough of the one page (single and bulk decisions, undo, keys)
shares one server, one browser and one distilled set of proposals; split, each file would build them again."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from helpers.browser import CHROMIUM, axe_violations, expect, signed_in_page
from helpers.facts_page import CONFIG, CUSTOMER, KEY, PIX, SHOE, conversation
from helpers.handlers import LambdaContext, load_event, load_handler
from helpers.paths import ROOT
from helpers.skips import skip_unless_present

from facts.cells import MemoryCells
from facts.keyed_hashes import FactKeys

T, A = "default", "store-support"
PAGE = ROOT / "studio_web" / "dist" / "facts.html"
pytestmark = skip_unless_present({"Debian's chromium": Path(CHROMIUM).exists(),
                                  "the built page (./run builds it with npm)": PAGE.exists()})


@pytest.fixture
def env(facts_stack):
    return dict(facts_stack, POWERTOOLS_LOG_LEVEL="WARNING")


@pytest.fixture
def proposed(monkeypatch, env, s3, sessions_bucket, script):
    """Ana's shoe size and payment, proposed by DistillFunction from an idle conversation."""
    conversation(s3, sessions_bucket, "sess_troca_01")
    script.replies = [json.dumps([SHOE, PIX])]
    report = load_handler("distill", monkeypatch, env).lambda_handler(load_event("distill.json"), LambdaContext())
    assert report["proposed"] == 2, report


@pytest.fixture
def studio(monkeypatch, env, proposed):
    from knowledge_dev.studio_server import LocalAuthorizer, StudioServer

    service = f"studio-{uuid.uuid4().hex[:6]}"
    knowledge = load_handler("studio_api", monkeypatch, env, POWERTOOLS_SERVICE_NAME=service)
    facts = load_handler("facts_api", monkeypatch, env, POWERTOOLS_SERVICE_NAME=f"facts-{service}")
    server = StudioServer(knowledge.lambda_handler, LocalAuthorizer(issuer="http://127.0.0.1/dev"),
                          context_factory=LambdaContext, facts_handler=facts.lambda_handler).start()
    monkeypatch.setenv("STUDIO_ORIGIN", server.url)
    yield server
    server.stop()


@pytest.fixture
def memory(monkeypatch, env):
    handler = load_handler("memory", monkeypatch, env)
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
    # Focus moved on to the next card itself, not onto one of its buttons: the next decision is one
    # key away (a, r, d), and Enter alone decides nothing.
    expect(page.locator("#pending-list .card")).to_have_count(1, timeout=20_000)
    expect(page.locator("#pending-list .card article")).to_be_focused()
    # And a rejection with its reason: r, type (an "a" or a "d" typed here is text), Enter.
    page.keyboard.press("r")
    expect(page.locator("#pending-list .reason-text")).to_be_focused()
    page.keyboard.type("cliente corrigiu depois, dado antigo")
    page.keyboard.press("Enter")
    expect(page.locator("#recent tbody tr", has_text="cliente corrigiu depois, dado antigo")).to_have_count(1)
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
    page.keyboard.press("Enter")  # no reason given: it is optional
    expect(page.locator("#status")).to_have_text(f"Removed fact_00249 from {CUSTOMER}'s memory.")
    expect(page.locator("#memory tbody tr")).to_have_count(199)
    assert set(memory()) == {f"fact_{i:05d}" for i in range(50, 249)}


def test_an_unreadable_memory_offers_restore_and_a_confirmed_reset(page, memory, s3, bucket):
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


# ------------------------------------------------------------------ at scale and at 390 px (issue 28, item 5)


def _distil_many(monkeypatch, env, s3, bucket, sessions_bucket, script, count: int) -> None:
    """`count` more pending proposals for Ana, each its own fact, by the real DistillFunction (50 a session)."""
    s3.put_object(Bucket=bucket, Key=f"agents/{T}/{A}/knowledge.yaml",
                  Body=CONFIG.replace("max_proposals: 5", "max_proposals: 50").encode())
    batches = [list(range(start, min(start + 50, count))) for start in range(0, count, 50)]
    for index, batch in enumerate(batches):
        conversation(s3, sessions_bucket, f"sess_lote_{index:02d}", hours_ago=20 - index)
    script.replies = [json.dumps([{"name": f"preferencia_{i:03d}", "value": f"opcao {i}", "confidence": 0.7,
                                   "evidence": [2]} for i in batch]) for batch in batches]
    report = load_handler("distill", monkeypatch, env).lambda_handler(load_event("distill.json"), LambdaContext())
    assert report["proposed"] == count, report


def _name_of(cards, index: int) -> str:
    return cards.nth(index).locator(".fact-name").text_content()


def test_deciding_card_65_of_80_in_a_queue_of_306_keeps_the_place_and_moves_focus_to_the_next(
        monkeypatch, env, s3, bucket, sessions_bucket, script, page, memory):
    _distil_many(monkeypatch, env, s3, bucket, sessions_bucket, script, 304)
    page.reload()
    expect(page.locator("#pending-count")).to_have_text("(306)", timeout=30_000)
    cards = page.locator("#pending-list .card")
    for shown in (40, 60, 80):
        page.get_by_role("button", name="Show more pending").click()
        expect(cards).to_have_count(shown, timeout=30_000)
    before, decided, after = _name_of(cards, 63), _name_of(cards, 64), _name_of(cards, 65)
    cards.nth(64).get_by_role("button", name="Approve & save to memory").click()
    expect(page.locator("#status")).to_contain_text(f"Saved to memory: {decided}")
    expect(page.locator("#pending-count")).to_have_text("(305)")
    expect(cards).to_have_count(79)  # the list does not collapse back to its first 20
    assert (_name_of(cards, 63), _name_of(cards, 64)) == (before, after)
    focused = page.evaluate("document.activeElement.closest('.card').querySelector('.fact-name').textContent")
    assert focused == after and page.evaluate("document.activeElement.tagName") == "ARTICLE"
    assert decided in memory()
    # The next decision is one key away, and the place still holds.
    page.keyboard.press("a")
    expect(page.locator("#status")).to_contain_text(f"Saved to memory: {after}")
    expect(cards).to_have_count(78)
    assert after in memory() and _name_of(cards, 63) == before


def test_a_mistyped_agent_says_there_is_no_such_agent_and_what_to_check(browser, studio, request):
    with signed_in_page(browser, f"{studio.url}/studio/facts?agent=store-suport", "#unknown-agent:not([hidden])",
                        f"facts-{request.node.name}.png") as page:
        expect(page.locator("#unknown-agent")).to_contain_text("There is no agent “store-suport” in tenant default")
        expect(page.locator("#unknown-agent")).to_contain_text("Check the agent's name in the address")
        expect(page.locator("#proposals-view")).to_be_hidden()
        assert "0 pending" not in page.locator("body").inner_text()
        expect(page.locator("#unknown-agent-title")).to_be_focused()
        assert axe_violations(page) == []
        link = page.get_by_role("link", name="choose an agent on the Knowledge page")
        assert link.get_attribute("href") == f"knowledge?tenant={T}"


def _memory_of_four_origins(page, memory, s3, bucket):
    """Ana's memory with a fact of each origin: approved, the agent's, an operator's, and a legacy one."""
    card(page, "tamanho_calcado").get_by_role("button", name="Approve & save to memory").click()
    expect(page.locator("#status")).to_contain_text("Saved to memory: tamanho_calcado")
    cells = MemoryCells(s3, bucket)
    cells.write_fact(T, CUSTOMER, "cor-preferida", "azul", "engine")
    cells.write_fact(T, CUSTOMER, "horario_entrega", "sábado de manhã", "operator")
    cells.write_fact(T, CUSTOMER, "apelido", "Aninha", "legacy")
    assert set(memory()) == {"tamanho_calcado", "cor-preferida", "horario_entrega", "apelido"}
    _open_memory(page)


def test_an_operator_removes_any_fact_saying_why_and_sees_who_removed_it(page, memory, s3, bucket):
    from facts import layout

    _memory_of_four_origins(page, memory, s3, bucket)
    for name, reason in (("tamanho_calcado", "cliente trocou de numeração"), ("cor-preferida", ""),
                         ("horario_entrega", "pedido da cliente"), ("apelido", "")):
        page.get_by_role("button", name=f"Remove {name}").click()
        why = page.get_by_label(f"Why remove {name}? (optional, kept with the removal)")
        expect(why).to_be_focused()
        why.fill(reason)
        page.keyboard.press("Enter")
        expect(page.locator("#status")).to_have_text(f"Removed {name} from {CUSTOMER}'s memory.")
        assert name not in memory()
    assert memory() == {}
    rows = page.locator("#memory-removed tbody tr")
    expect(rows).to_have_count(4)
    assert axe_violations(page) == []
    expect(rows.first).to_contain_text("apelido")
    expect(rows.first).to_contain_text("dev-operator")
    tamanho = page.locator("#memory-removed tbody tr", has_text="tamanho_calcado")
    expect(tamanho).to_contain_text("cliente trocou de numeração")
    expect(tamanho).to_contain_text("dev-operator")
    # Versioned: the earlier version of the cell still holds each removed value.
    key = layout.cell_key(T, CUSTOMER)
    bodies = [s3.get_object(Bucket=bucket, Key=key, VersionId=v["VersionId"])["Body"].read().decode()
              for v in s3.list_object_versions(Bucket=bucket, Prefix=key)["Versions"]]
    assert all(any(value in body for body in bodies) for value in ("43", "azul", "sábado de manhã", "Aninha"))


def test_removing_can_be_cancelled_with_escape_and_nothing_is_removed(page, memory, s3, bucket):
    _memory_of_four_origins(page, memory, s3, bucket)
    page.get_by_role("button", name="Remove apelido").click()
    assert axe_violations(page) == []  # the row asking why
    page.keyboard.press("Escape")
    expect(page.get_by_role("button", name="Remove apelido")).to_be_focused()
    assert "apelido" in memory()


def test_personal_data_typed_into_memory_is_warned_about_before_saving(page, memory):
    _open_memory(page)
    page.get_by_label("New fact").fill("documento")
    page.get_by_label("Value").fill("CPF 529.982.247-25")
    page.get_by_role("button", name="Add to memory").click()
    warning = page.locator("#personal-data")
    expect(warning).to_contain_text("documento: this value looks like it holds a CPF")
    assert memory() == {}  # nothing saved, so nothing reaches the <memory> block
    expect(page.get_by_role("button", name="Save it anyway, with this personal data")).to_be_focused()
    assert axe_violations(page) == []
    page.get_by_role("button", name="Save it anyway, with this personal data").click()
    expect(page.locator("#status")).to_have_text(f"Saved documento = “CPF 529.982.247-25” to {CUSTOMER}'s memory.")
    assert memory() == {"documento": ("CPF 529.982.247-25", "operator")}
    expect(warning).to_be_hidden()
    # A card number is refused outright: there is nothing to confirm.
    page.get_by_label("New fact").fill("cartao")
    page.get_by_label("Value").fill("4111 1111 1111 1111")
    page.get_by_role("button", name="Add to memory").click()
    expect(warning).to_contain_text("cartao: this value holds a payment card number")
    expect(warning.get_by_role("button")).to_have_count(1)  # "Change the value" only
    assert "cartao" not in memory()


def test_a_bad_fact_name_is_explained_in_words_with_an_example(page, memory):
    _open_memory(page)
    page.get_by_label("New fact").fill("Tamanho Calçado")
    page.get_by_label("Value").fill("43")
    page.get_by_role("button", name="Add to memory").click()
    problem = page.locator("#problem-text")
    expect(problem).to_contain_text("a fact name is lowercase letters (a-z, no accents) and digits")
    expect(problem).to_contain_text("for example shoe_size")
    expect(problem).to_contain_text("tamanho_calcado would do")
    assert "^" not in problem.text_content() and "[a-z0-9]" not in problem.text_content()
    expect(page.locator("#add-fact-hint")).to_contain_text("lowercase letters and digits")
    assert memory() == {}


def test_at_390_px_an_inline_edit_or_a_removal_does_not_widen_the_page(page, memory, s3, bucket):
    MemoryCells(s3, bucket).write_fact(T, CUSTOMER, "endereco_entrega_preferido_para_trocas",
                                       "retirar na loja do shopping, sábados depois das dez horas", "operator")
    page.set_viewport_size({"width": 390, "height": 800})
    _open_memory(page)
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    page.get_by_role("button", name="Edit endereco_entrega_preferido_para_trocas").click()
    expect(page.get_by_label("New value of endereco_entrega_preferido_para_trocas")).to_be_focused()
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    page.get_by_role("button", name="Cancel").click()
    page.get_by_role("button", name="Remove endereco_entrega_preferido_para_trocas").click()
    assert page.evaluate("document.documentElement.scrollWidth") <= 390


# ------------------------------------------------------------------ many at once, and the way back
OTHERS = ("cust-3001-caio", "cust-3002-dora", "cust-3003-eli")


def _more_shoes(monkeypatch, env, s3, sessions_bucket, script):
    """tamanho_calcado=43 pending for three more customers: with Ana's, a group of 4 of one fact name."""
    for n, customer in enumerate(OTHERS):
        conversation(s3, sessions_bucket, f"sess_shoe_{n}", customer=customer, hours_ago=7 + n / 10)
    script.replies = [json.dumps([SHOE])] * len(OTHERS)
    load_handler("distill", monkeypatch, env).lambda_handler(load_event("distill.json"), LambdaContext())


def _memory_of(monkeypatch, env, customer):
    handler = load_handler("memory", monkeypatch, env)
    return {f["name"]: f["value"] for f in handler.lambda_handler(
        {"action": "read", "tenant": T, "customer_id": customer}, LambdaContext())["facts"]}


def test_a_group_of_4_approved_in_one_action_and_one_undone_leaves_its_memory_as_before(
        monkeypatch, env, s3, sessions_bucket, script, page):
    _more_shoes(monkeypatch, env, s3, sessions_bucket, script)
    page.reload()
    expect(page.locator("#pending-count")).to_have_text("(5)")
    page.get_by_label("Fact name").select_option("tamanho_calcado")
    cards = page.locator("#pending-list .card")
    expect(cards).to_have_count(4)
    expect(page.locator("#pending-filtered")).to_contain_text("Showing 4 of 5")
    expect(cards.locator("blockquote").first).to_be_visible()  # the evidence is on screen with each value
    page.get_by_label("Select all shown (at most 50)").check()
    expect(page.locator("#bulk-count")).to_have_text("4 selected")
    page.get_by_role("button", name="Approve selected").click()
    expect(page.locator("#bulk-result-title")).to_have_text("Approved 4 of 4 in one action")
    expect(page.locator("#bulk-result-title")).to_be_focused()  # what happened, not another action
    expect(page.locator("#bulk-outcomes li")).to_have_count(4)
    expect(page.locator("#bulk-outcomes li").first).to_contain_text("saved to memory")
    for customer in (CUSTOMER, *OTHERS):
        assert _memory_of(monkeypatch, env, customer) == {"tamanho_calcado": "43"}
    # Recent: one bulk decision by the operator, each fact with its own undo.
    expect(page.locator("#recent tr.batch")).to_have_count(1)
    expect(page.locator("#recent tr.batch")).to_contain_text("One action: Approved 4 by dev-operator")
    page.get_by_role("button", name=f"Undo approval: tamanho_calcado for {T}:{OTHERS[1]}").click()
    expect(page.locator("#status")).to_have_text(
        f"Undone: tamanho_calcado for {T}:{OTHERS[1]} is pending again, and the customer's memory is as before "
        "the approval.")
    expect(page.locator("#recent-title")).to_be_focused()
    assert _memory_of(monkeypatch, env, OTHERS[1]) == {}  # the cell as before: no shoe size
    assert _memory_of(monkeypatch, env, OTHERS[0]) == {"tamanho_calcado": "43"}
    expect(page.locator("#recent tr.batch")).to_contain_text("Approved 3")
    expect(cards).to_have_count(1)
    expect(cards.first.locator(".meta")).to_contain_text(OTHERS[1])


def test_an_undo_after_an_operator_changed_the_fact_says_why(page, s3, bucket, memory):
    card(page, "tamanho_calcado").get_by_role("button", name="Approve & save to memory").click()
    expect(page.locator("#recent tbody tr", has_text="tamanho_calcado")).to_have_count(1)
    MemoryCells(s3, bucket).write_fact(T, CUSTOMER, "tamanho_calcado", "44", "operator")
    page.get_by_role("button", name=f"Undo approval: tamanho_calcado for {T}:{CUSTOMER}").click()
    expect(page.locator("#status")).to_contain_text("Could not undo tamanho_calcado")
    expect(page.locator("#status")).to_contain_text("changed in the customer's memory since it was approved")
    assert memory() == {"tamanho_calcado": ("44", "operator")}


def test_a_dismissed_proposal_is_reopened_from_recent(page, memory, s3, bucket):
    card(page, "pagamento_preferido").get_by_role("button", name="Dismiss — will not be proposed again").click()
    expect(card(page, "pagamento_preferido")).to_have_count(0)
    assert latched(s3, bucket, "pagamento_preferido", "Pix")
    page.get_by_role("button", name=f"Reopen: pagamento_preferido for {T}:{CUSTOMER}").click()
    expect(page.locator("#status")).to_have_text(
        f"Reopened pagamento_preferido = “Pix” for {T}:{CUSTOMER}: it is pending again and may be proposed again.")
    expect(card(page, "pagamento_preferido")).to_have_count(1)
    expect(page.locator("#recent tbody tr")).to_have_count(0)
    assert not latched(s3, bucket, "pagamento_preferido", "Pix") and memory() == {}


def test_a_stray_enter_after_a_decision_approves_nothing(page, memory):
    card(page, "tamanho_calcado").get_by_role("button", name="Approve & save to memory").click()
    expect(page.locator("#pending-list .card")).to_have_count(1)
    expect(page.locator("#pending-list .card article")).to_be_focused()
    page.keyboard.press("Enter")
    page.keyboard.press("Enter")
    page.keyboard.press(" ")
    page.wait_for_timeout(800)
    expect(card(page, "pagamento_preferido")).to_have_count(1)
    assert memory() == {"tamanho_calcado": ("43", "distilled:sess_troca_01")}
    # A decision key typed into a field is text: the reason of a rejection takes "a" and "d" as letters.
    card(page, "pagamento_preferido").get_by_role("button", name="Reject", exact=True).click()
    page.keyboard.type("dado antigo")
    expect(page.locator("#pending-list .reason-text")).to_have_value("dado antigo")
    assert memory() == {"tamanho_calcado": ("43", "distilled:sess_troca_01")}
    expect(card(page, "pagamento_preferido")).to_have_count(1)


def test_bulk_decisions_and_undo_are_axe_clean_and_fit_390_px(monkeypatch, env, s3, sessions_bucket, script, page):
    _more_shoes(monkeypatch, env, s3, sessions_bucket, script)
    page.reload()
    expect(page.locator("#pending-count")).to_have_text("(5)")
    page.locator("#pending-list .card input.select").nth(0).check()
    page.locator("#pending-list .card input.select").nth(1).check()
    expect(page.locator("#bulk-count")).to_have_text("2 selected")
    assert axe_violations(page) == []
    page.get_by_role("button", name="Dismiss selected").click()
    expect(page.locator("#bulk-result-title")).to_have_text("Dismissed 2 of 2 in one action")
    expect(page.locator("#recent tr.batch")).to_have_count(1)
    assert axe_violations(page) == []
    page.set_viewport_size({"width": 390, "height": 800})
    page.locator("#filter-customer").select_option(OTHERS[2])
    expect(page.locator("#pending-list .card")).to_have_count(1)
    page.get_by_label("Select all shown (at most 50)").check()
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    assert axe_violations(page) == []
