"""The Python client (clients/python) through the local stack's Lambda Invoke endpoint and the real
RetrieveFunction and MemoryFunction handlers, and moto's SQS for the turn."""

from __future__ import annotations

import json
import uuid
from datetime import datetime, timezone

import pytest
from helpers.aws import drain, new_queue
from helpers.handlers import load_handler
from helpers.paths import DEMO
from knowledge_client import Disabled, FunctionFailed, Gated, KnowledgeClient, NotFound, RequestInvalid, Unreachable
from knowledge_client.models import LoadAnswer, RetrieveAnswer

from knowledge.format.concept import parse
from knowledge.format.turn import parse_turn
from knowledge.store.archive import TurnArchive
from knowledge_dev.lambda_endpoint import LambdaEndpoint
from knowledge_dev.local_aws import free_port

T, A, CUSTOMER = "default", "store-support", "cus-4410"


class Counted:
    def __init__(self, handler):
        self.handler, self.calls = handler, 0

    def __call__(self, event, context):
        self.calls += 1
        return self.handler(event, context)


@pytest.fixture
def endpoint(monkeypatch, store, bucket, bus, sessions_bucket, candidates_queue):
    store.put_config(T, A, (DEMO / "knowledge.yaml").read_text(), actor="operator:demo")
    for path in sorted(DEMO.glob("*.md")):
        store.create(T, A, parse(path.read_text()), actor="engine")
    retrieve = load_handler("retrieve", monkeypatch, dict(
        KNOWLEDGE_BUCKET=bucket, EVENT_BUS_NAME=bus["name"], SESSIONS_BUCKET=sessions_bucket,
        CANDIDATES_QUEUE_URL=candidates_queue), POWERTOOLS_SERVICE_NAME=f"knowledge-retrieve-{uuid.uuid4().hex[:6]}")
    memory = load_handler("memory", monkeypatch, dict(KNOWLEDGE_BUCKET=bucket))
    handlers = {"retrieve": Counted(retrieve.lambda_handler), "memory": Counted(memory.lambda_handler)}
    server = LambdaEndpoint({name: (handler, 10_000) for name, handler in handlers.items()}).start()
    server.counted = handlers
    yield server
    server.stop()


@pytest.fixture
def client(endpoint, moto_endpoint, sqs):
    return KnowledgeClient(A, T, endpoint_url=endpoint.url, sqs_endpoint_url=moto_endpoint,
                           turn_queue_url=new_queue(sqs), region_name="us-east-1")


def test_retrieve_answers_the_typed_block_and_load_answers_the_concept(client, sqs, bus):
    answer = client.retrieve("sess_demo_02", "Moro em Campinas, o frete é grátis?")
    assert isinstance(answer, RetrieveAnswer)
    assert answer.block.startswith('<knowledge>\n  <concept name="frete-gratis-acima-199"')  # the policy first
    assert answer.tool is not None and answer.tool.name == "load_knowledge"
    loaded = client.load_knowledge("sess_demo_02", answer.concepts[0].name)
    assert isinstance(loaded, LoadAnswer)
    assert loaded.markdown == (DEMO / "frete-gratis-acima-199.md").read_text()
    assert loaded.concept.type == "policy" and loaded.concept.recall is None
    [event] = [json.loads(m["Body"]) for m in drain(sqs, bus["queue"])]
    assert event["detail-type"] == "knowledge_retrieved" and event["detail"]["session_id"] == "sess_demo_02"


def test_an_unknown_concept_is_a_typed_not_found(client):
    with pytest.raises(NotFound) as caught:
        client.load_knowledge("sess_demo_02", "nao-existe")
    assert caught.value.code == "not_found" and "no such concept" in caught.value.message


@pytest.mark.parametrize("call, args, field", [
    ("retrieve", ("sess 1", "oi"), "session_id"),
    ("retrieve", ("s1", "x" * 8001), "message"),
    ("load_knowledge", ("s1", "x" * 201), "name"),
    ("remember", ("../etc", "cidade", "Natal"), "customer_id"),
    ("remember", (CUSTOMER, "cidade", ""), "value"),
])
def test_a_request_outside_its_schema_is_refused_before_anything_is_sent(client, endpoint, call, args, field):
    with pytest.raises(RequestInvalid) as caught:
        getattr(client, call)(*args)
    assert str(caught.value).startswith(f"{field}:")
    assert "Natal" not in str(caught.value) and "etc" not in str(caught.value)
    assert sum(handler.calls for handler in endpoint.counted.values()) == 0


def test_a_client_for_an_agent_that_could_never_exist_is_refused_at_once():
    with pytest.raises(RequestInvalid, match="^agent:"):
        KnowledgeClient("Store Support", endpoint_url="http://127.0.0.1:1")


def test_remember_then_read_memory_through_the_real_handler(client):
    written = client.remember(CUSTOMER, "cidade", "Natal", session_id="sess_9")
    assert (written.fact.name, written.fact.value, written.fact.origin, written.fact.revision) == (
        "cidade", "Natal", "engine", 1)
    memory = client.read_memory(CUSTOMER)
    assert memory.block == '<memory>\n  <fact name="cidade">Natal</fact>\n</memory>'
    assert [fact.name for fact in memory.facts] == ["cidade"] and memory.priority == 75


def test_send_turn_puts_a_message_the_service_reads_with_its_record_of_what_was_shown(client, sqs):
    client.send_turn("sess_77", "turn_0001", [("user", "Vocês entregam em Campinas?"),
                                              {"role": "assistant", "content": "Sim, em 1-2 dias úteis."}],
                     customer_id=CUSTOMER, retrieved=["cep-sudeste-cd-campinas", "cep-sudeste-cd-campinas"],
                     loaded=["cep-sudeste-cd-campinas"])
    [message] = drain(sqs, client.turn_queue_url)
    turn = parse_turn(message["Body"])
    assert (turn.tenant, turn.agent, turn.session_id, turn.turn_id, turn.customer_id) == (
        T, A, "sess_77", "turn_0001", CUSTOMER)
    assert turn.shown.retrieved == ("cep-sudeste-cd-campinas",) and turn.shown.loaded == ("cep-sudeste-cd-campinas",)
    assert [m.role for m in turn.messages] == ["user", "assistant"]


def test_a_turn_with_a_broken_message_is_never_sent(client, sqs):
    with pytest.raises(RequestInvalid, match=r"^messages\.0\.role:"):
        client.send_turn("sess_77", "turn_0002", [("customer", "oi")])
    assert drain(sqs, client.turn_queue_url) == []


def test_a_read_is_retried_when_the_service_cannot_be_reached_and_a_write_is_sent_once():
    waits: list[float] = []
    nowhere = KnowledgeClient(A, endpoint_url=f"http://127.0.0.1:{free_port()}", region_name="us-east-1",
                              attempts=3, timeout_seconds=1, sleep=waits.append)
    with pytest.raises(Unreachable):
        nowhere.retrieve("s1", "frete")
    assert len(waits) == 2
    waits.clear()
    with pytest.raises(Unreachable):
        nowhere.remember(CUSTOMER, "cidade", "Natal")
    assert waits == []


def test_an_unknown_function_and_a_misconfigured_one_are_function_failures(endpoint, monkeypatch):
    wrong = KnowledgeClient(A, endpoint_url=endpoint.url, region_name="us-east-1", retrieve_function="Nope")
    with pytest.raises(FunctionFailed, match="ResourceNotFoundException"):
        wrong.retrieve("s1", "frete")
    monkeypatch.delenv("EVENT_BUS_NAME", raising=False)
    broken = load_handler("retrieve", monkeypatch, dict(KNOWLEDGE_BUCKET="b"))
    server = LambdaEndpoint({"retrieve": (broken.lambda_handler, 10_000)}).start()
    try:
        client = KnowledgeClient(A, endpoint_url=server.url, region_name="us-east-1")
        with pytest.raises(FunctionFailed, match="Unhandled"):
            client.retrieve("s1", "frete")
    finally:
        server.stop()


def test_search_then_save_through_the_client(client, endpoint, s3, sessions_bucket, sqs, candidates_queue, store):
    hits = client.search_knowledge("sess_77", "frete grátis Campinas", limit=5).hits
    assert hits and len(hits) <= 5 and any(hit.injected for hit in hits)
    turn = parse_turn(json.dumps({
        "tenant": T, "agent": A, "session_id": "sess_77", "turn_id": "turn_0001",
        "completed_at": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "messages": [{"role": "user", "content": "Tem retirada na loja?"},
                     {"role": "assistant", "content": "Sim, a retirada na loja de Natal fica pronta em 2 horas."}]}))
    TurnArchive(s3, sessions_bucket).put(turn)
    saved = client.save_knowledge("sess_77", "retirada-natal-2h", "Store pickup in Natal is ready in 2 hours.",
                                  "fact", "Pickup orders at the Natal store are ready within 2 hours.",
                                  "retirada na loja de Natal fica pronta em 2 horas")
    assert (saved.name, saved.turn_id, saved.status) == ("retirada-natal-2h", "turn_0001", "queued")
    assert len(drain(sqs, candidates_queue)) == 1
    with pytest.raises(Gated, match="evidence_not_found"):
        client.save_knowledge("sess_77", "retirada-natal-2h", "x", "fact", "x", "entregamos em todo o Brasil")
    store.put_config(T, "quiet", "knowledge:\n  extract: false\n", actor="operator:t")
    quiet = KnowledgeClient("quiet", T, endpoint_url=endpoint.url, region_name="us-east-1")
    with pytest.raises(Disabled):
        quiet.save_knowledge("sess_77", "x", "x", "fact", "x", "retirada na loja de Natal")


def test_a_mistyped_agent_is_unknown_agent_in_every_call_not_an_empty_agent(endpoint, moto_endpoint, sqs):
    from knowledge_client import UnknownAgent

    typo = KnowledgeClient("store-suport", T, endpoint_url=endpoint.url, sqs_endpoint_url=moto_endpoint,
                           turn_queue_url=new_queue(sqs), region_name="us-east-1")
    block = typo.retrieve("s1", "frete grátis")
    assert block.block == "" and block.tool is None and block.reason == "unknown_agent"
    calls = (lambda: typo.load_knowledge("s1", "cep-sudeste-cd-campinas"), lambda: typo.search_knowledge("s1", "frete"),
             lambda: typo.save_knowledge("s1", "x", "y", "fact", "z", "quoted"))
    for made in calls:
        with pytest.raises(UnknownAgent) as caught:
            made()
        assert isinstance(caught.value, NotFound) and "store-suport" in caught.value.message


def test_a_builder_lists_the_agents_concepts_and_reads_a_history_through_the_client(client, store):
    names = [entry.name for entry in client.iter_knowledge(limit=2)]
    assert names == sorted(path.stem for path in DEMO.glob("*.md"))
    objections = client.list_knowledge(type="objection")
    assert [c.name for c in objections.concepts] == ["objecao-frete-caro"] and objections.next_after is None
    history = client.knowledge_history("troca-em-30-dias")
    [version] = history.versions
    assert version.actor == "engine" and version.reason == "created" and version.latest
    text = client.knowledge_history("troca-em-30-dias", version.version_id).markdown
    assert text == store.get(T, A, "troca-em-30-dias").text
    with pytest.raises(RequestInvalid, match="limit"):
        client.list_knowledge(limit=500)
    with pytest.raises(NotFound):
        client.knowledge_history("nao-existe")


def test_a_builder_follows_a_save_to_its_outcome_through_the_client(client, endpoint, monkeypatch, s3, sessions_bucket,
                                                                    sqs, candidates_queue, bucket, bus):
    from helpers.handlers import LambdaContext
    from knowledge_client import SaveLimit  # noqa: F401 - the cap's typed error, exported

    from knowledge_dev.poller import sqs_event

    said = "Despachamos todo pedido pago até as 14h no mesmo dia útil."
    turn = parse_turn(json.dumps({"tenant": T, "agent": A, "session_id": "sess_follow", "turn_id": "turn_1",
                                  "completed_at": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                                  "messages": [{"role": "user", "content": "Sai hoje?"},
                                               {"role": "assistant", "content": said}]}))
    TurnArchive(s3, sessions_bucket).put(turn)
    saved = client.save_knowledge("sess_follow", "despacho-mesmo-dia", "Paid by 14h ships the same day.", "fact",
                                  "Orders paid by 14h ship the same business day.", "pedido pago até as 14h")
    assert client.save_status(saved.save_id).status == "queued"
    messages = drain(sqs, candidates_queue)
    consolidate = load_handler("consolidate", monkeypatch, dict(
        KNOWLEDGE_BUCKET=bucket, SESSIONS_BUCKET=sessions_bucket, EVENT_BUS_NAME=bus["name"]))
    consolidate.lambda_handler(sqs_event(messages, "arn:aws:sqs:us-east-1:123456789012:c.fifo"), LambdaContext())
    outcome = client.save_status(saved.save_id)
    assert outcome.status == "created" and outcome.name == "despacho-mesmo-dia" and outcome.settled_at
