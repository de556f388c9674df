"""Retrieval's one hop, through RetrieveFunction: it follows the links of the text a concept states (an
operator's, a judged merge's, extraction's), never one inside an engine-written entry — a claim kept
beside, a contradiction, a policy noted beside (issue 36: an import once wrote ten such links into the
concepts the tour's freight question reaches, and the question injected 10 concepts instead of 3)."""

from __future__ import annotations

import uuid

import pytest
from helpers.handlers import LambdaContext, load_handler
from helpers.paths import DEMO

from knowledge.format.concept import parse

T, A = "default", "store-support"
QUESTION = "Moro em Campinas, o frete é grátis?"
POLLUTED = ("\n\n## Related claims\n\n"
            "Policy [[rastreio-pedido]] (2026-12-01), not judged: Rastreio pelo link do e-mail.\n\n"
            "Policy [[troca-em-30-dias]] (2026-12-01), judged contradicting: Trocas em até 30 dias.\n\n"
            "Session sess_9 (2026-11-30): Cliente diz que o frete é caro, veja [[parcelamento-sem-juros-10x]].\n\n"
            "## Contradiction\n\n"
            "Session sess_8 (2026-11-29): Reembolso no Pix em 2 dias, veja [[prazo-reembolso-pix]].")


@pytest.fixture
def agent(store):
    store.put_config(T, A, (DEMO / "knowledge.yaml").read_text(), actor="operator:demo")
    for path in sorted(DEMO.glob("*.md")):
        store.create(T, A, parse(path.read_text()), actor="engine")
    return store


def ask(monkeypatch, bucket, bus) -> dict[str, bool]:
    retrieve = load_handler("retrieve", monkeypatch, dict(KNOWLEDGE_BUCKET=bucket, EVENT_BUS_NAME=bus["name"]),
                            POWERTOOLS_SERVICE_NAME=f"knowledge-retrieve-{uuid.uuid4().hex[:6]}")
    answer = retrieve.lambda_handler({"agent": A, "session_id": "sess_hop", "message": QUESTION}, LambdaContext())
    return {c["name"]: c["linked"] for c in answer["concepts"]}


def pollute(store, name: str, extra: str = "") -> None:
    current = store.get(T, A, name)
    body = current.concept.body + extra + POLLUTED
    store.replace(T, A, current.concept.replace(body=body), if_match=current.etag, actor="engine",
                  reason="kept_beside")


def test_the_hop_never_follows_a_link_inside_an_engine_written_entry(monkeypatch, agent, bucket, bus):
    before = ask(monkeypatch, bucket, bus)
    for name in before:
        pollute(agent, name)
    assert ask(monkeypatch, bucket, bus) == before  # the same concepts, the same way


def test_a_link_an_operator_wrote_above_the_entries_is_followed_as_before(monkeypatch, agent, bucket, bus):
    before = ask(monkeypatch, bucket, bus)
    first = next(iter(before))
    pollute(agent, first, extra=" Veja também [[prazo-reembolso-pix]].")
    after = ask(monkeypatch, bucket, bus)
    assert after.pop("prazo-reembolso-pix") is True and after == before
