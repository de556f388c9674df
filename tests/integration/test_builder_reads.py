"""The builders' reads through the real RetrieveFunction handler: an agent's concepts listed (filters,
pages, recall states, each learned word's origin) and a concept's history (who, why, when, a
version's text), serving only what load_knowledge may serve."""

from __future__ import annotations

import uuid
from datetime import date, datetime, timezone

import pytest
from helpers.concepts import make_concept
from helpers.handlers import LambdaContext, load_handler
from helpers.paths import DEMO

from knowledge.format.concept import parse
from knowledge.format.learned_words import LearnedWord
from knowledge.store.keys import SHARED
from knowledge.store.waiting import WaitingPair

T, A = "default", "store-support"
DEMO_NAMES = sorted(path.stem for path in DEMO.glob("*.md"))


@pytest.fixture
def retrieve(monkeypatch, store, bucket, bus):
    store.put_config(T, A, (DEMO / "knowledge.yaml").read_text(), actor="operator:demo")
    for path in sorted(DEMO.glob("*.md")):
        store.create(T, A, parse(path.read_text()), actor="engine")
    return load_handler("retrieve", monkeypatch, dict(KNOWLEDGE_BUCKET=bucket, EVENT_BUS_NAME=bus["name"]),
                        KNOWLEDGE_REFRESH_SECONDS="0",
                        POWERTOOLS_SERVICE_NAME=f"knowledge-retrieve-{uuid.uuid4().hex[:6]}")


def call(handler, **event) -> dict:
    return handler.lambda_handler({"tenant": T, "agent": A, **event}, LambdaContext())


def listed(handler, **filters) -> list[str]:
    return [c["name"] for c in call(handler, action="list_knowledge", limit=100, **filters)["concepts"]]


def test_a_builder_pages_through_every_concept_by_name(retrieve):
    seen, after = [], None
    while True:
        page = call(retrieve, action="list_knowledge", limit=3, **({"after": after} if after else {}))
        assert page["total"] == len(DEMO_NAMES) and len(page["concepts"]) <= 3
        seen += [c["name"] for c in page["concepts"]]
        after = page["next_after"]
        if after is None:
            break
    assert seen == DEMO_NAMES
    first = call(retrieve, action="list_knowledge", limit=1)["concepts"][0]
    assert set(first) >= {"description", "type", "provenance", "confidence", "occurrences", "updated_at", "recall",
                          "conflict", "waiting", "learned_words", "shared"}


def test_filters_by_type_provenance_since_and_recall_state(retrieve, store):
    assert listed(retrieve, type="objection") == ["objecao-frete-caro"]
    policies = listed(retrieve, provenance="policy")
    assert policies and all(name in DEMO_NAMES for name in policies)
    assert set(listed(retrieve, provenance="observed")) == set(DEMO_NAMES) - set(policies)
    now = datetime.now(timezone.utc).replace(microsecond=0)
    store.create(T, A, make_concept("troca-tamanho-retirado", created_at=now, updated_at=now,
                                    retired_by="troca-em-30-dias"), actor="engine")
    store.create(T, A, make_concept("entrega-sabado-em-disputa", created_at=now, updated_at=now, body=(
        "Deliveries on Saturdays.\n\n## Contradiction\n\nSession sess_9 (2026-12-01): no Saturday deliveries.")),
        actor="engine")
    store.waiting().put(T, A, WaitingPair(concept="rastreio-pedido", kind="sighting", why="no_model",
                                          since="2026-12-01", description="Tracking takes 2 days.", body="x",
                                          session_id="s9", turn_id="t1"))
    assert listed(retrieve, since=now.strftime("%Y-%m-%d")) == ["entrega-sabado-em-disputa", "troca-tamanho-retirado"]
    assert listed(retrieve, recall="retired") == ["troca-tamanho-retirado"]
    assert "troca-tamanho-retirado" not in listed(retrieve, recall="in_recall")
    assert listed(retrieve, recall="waiting") == ["rastreio-pedido"]
    [entry] = [c for c in call(retrieve, action="list_knowledge", limit=100)["concepts"]
               if c["name"] == "rastreio-pedido"]
    assert entry["waiting"] == 1
    conflicted = call(retrieve, action="list_knowledge", recall="conflict")["concepts"]
    assert "entrega-sabado-em-disputa" in [c["name"] for c in conflicted] and all(c["conflict"] for c in conflicted)
    assert "troca-tamanho-retirado" not in [c["name"] for c in conflicted]


def test_each_learned_word_is_listed_with_its_origin(retrieve, store):
    current = store.get(T, A, "cep-sudeste-cd-campinas")
    store.replace(T, A, current.concept.replace(learned_words=(
        LearnedWord("fretinho", "loaded", 3, date(2026, 11, 2)), LearnedWord("cd campinas", "model", 0,
                                                                             date(2026, 11, 3)),
        LearnedWord("entrega rapida", "operator", 0, date(2026, 11, 4)))),
        if_match=current.etag, actor="operator:ana", reason="edit")
    [entry] = [c for c in call(retrieve, action="list_knowledge", limit=100)["concepts"]
               if c["name"] == "cep-sudeste-cd-campinas"]
    assert entry["learned_words"] == [{"word": "fretinho", "origin": "loaded", "sessions": 3},
                                      {"word": "cd campinas", "origin": "model", "sessions": 0},
                                      {"word": "entrega rapida", "origin": "operator", "sessions": 0}]


def test_a_history_says_who_why_and_when_and_answers_a_versions_text(retrieve, store):
    current = store.get(T, A, "troca-em-30-dias")
    store.replace(T, A, current.concept.replace(description="Exchanges within 45 days."), if_match=current.etag,
                  actor="operator:ana", reason="edit")
    history = call(retrieve, action="knowledge_history", name="troca-em-30-dias")
    assert [(v["actor"], v["reason"], v["latest"]) for v in history["versions"]] == [
        ("operator:ana", "edit", True), ("engine", "created", False)]
    assert history["markdown"] is None and history["shared"] is False
    assert all(v["time"].endswith("Z") for v in history["versions"])
    old = history["versions"][1]["version_id"]
    text = call(retrieve, action="knowledge_history", name="troca-em-30-dias", version_id=old)["markdown"]
    assert text == current.text
    missing = call(retrieve, action="knowledge_history", name="troca-em-30-dias", version_id="nope")
    assert missing["error"]["code"] == "not_found"


def test_reads_serve_only_what_load_knowledge_may_serve(retrieve, store):
    assert call(retrieve, action="knowledge_history", name="nao-existe")["error"]["code"] == "not_found"
    for action, extra in (("list_knowledge", {}), ("knowledge_history", {"name": "troca-em-30-dias"})):
        answer = call(retrieve, action=action, agent="store-suport", **extra)
        assert answer["error"]["code"] == "unknown_agent"
    store.put_config(T, "quiet", "knowledge:\n  retrieve: false\n", actor="operator:t")
    store.create(T, "quiet", make_concept("segredo"), actor="engine")
    assert call(retrieve, action="list_knowledge", agent="quiet")["error"]["code"] == "not_found"
    # Another tenant's agent of the same name is not this one.
    assert call(retrieve, action="list_knowledge", tenant="other-store")["error"]["code"] == "unknown_agent"


def test_a_shared_concept_is_listed_for_an_agent_that_recalls_it_and_its_text_has_no_claims_beside(retrieve, store):
    store.put_config(T, "site-chat", "knowledge:\n  shared: true\n", actor="operator:t")
    body = ("Returns are free within 30 days.\n\n## Related claims\n\n"
            "Session sess_x (2026-12-01): Returns take 45 days.\n\n> devolvemos em 45 dias")
    store.create(T, SHARED, make_concept("devolucao-gratis", provenance="policy", body=body), actor="operator:ana")
    entries = call(retrieve, action="list_knowledge", agent="site-chat")["concepts"]
    assert [(c["name"], c["shared"]) for c in entries] == [("devolucao-gratis", True)]
    history = call(retrieve, action="knowledge_history", agent="site-chat", name="devolucao-gratis")
    assert history["shared"] is True
    text = call(retrieve, action="knowledge_history", agent="site-chat", name="devolucao-gratis",
                version_id=history["versions"][0]["version_id"])["markdown"]
    assert "Returns are free within 30 days." in text and "45" not in text and "sess_x" not in text
    assert "devolucao-gratis" not in listed(retrieve)  # the agent that did not opt in


@pytest.mark.parametrize("change, field", [({"limit": 0}, "limit"), ({"limit": 101}, "limit"),
                                           ({"since": "yesterday"}, "since"), ({"recall": "gone"}, "recall"),
                                           ({"type": "rumour"}, "type"), ({"after": "Not A Slug"}, "after")])
def test_a_bad_filter_is_refused_naming_the_field(retrieve, change, field):
    error = call(retrieve, action="list_knowledge", **change)["error"]
    assert error["code"] == "invalid_request" and field in error["message"]


def test_the_cli_lists_the_agents_concepts_with_their_states_and_says_unknown_agent(retrieve, bucket, monkeypatch,
                                                                                    capsys):
    from knowledge_cli.main import main

    monkeypatch.setenv("KNOWLEDGE_BUCKET", bucket)
    assert main(["list", "--agent", A, "--limit", "2"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(DEMO_NAMES[0]) and out[1].startswith(DEMO_NAMES[1])
    assert out[2] == f"2 of {len(DEMO_NAMES)} concepts; next: --after {DEMO_NAMES[1]}"
    assert main(["list", "--agent", "store-suport"]) == 1
    assert "unknown_agent" in capsys.readouterr().err
