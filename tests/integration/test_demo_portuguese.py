"""The demo agent is Portuguese end to end: the demo turn, consolidated and distilled through the
real handlers with the scripted model's fixtures (devstack/knowledge_dev/demo/model_script.json),
writes Portuguese concepts and passes the language gate; and every fixture still answers the prompt
the product sends, so a rule whose prompt text changed fails here instead of answering `[]`."""

from __future__ import annotations

import json
import uuid
from datetime import datetime, timedelta, timezone

import pytest
from helpers.aws import drain
from helpers.handlers import LambdaContext, load_event, load_handler
from helpers.paths import DEMO

from facts.proposals import ProposalStore
from knowledge.format.concept import parse
from knowledge_dev.scripted_model import rules_responder
from shared.language import detect, other_language

T, A = "default", "store-support"
RULES = json.loads((DEMO / "model_script.json").read_text())["rules"]


@pytest.fixture
def demo(monkeypatch, store, bucket, sessions_bucket, candidates_queue, bus, model):
    store.put_config(T, A, (DEMO / "knowledge.yaml").read_text(), actor="operator:demo")
    for path in sorted(DEMO.glob("*.md")):
        store.create(T, A, parse(path.read_text()), actor="engine")
    hits: list = []
    model.responder = rules_responder(RULES, hits=hits)
    env = dict(KNOWLEDGE_BUCKET=bucket, SESSIONS_BUCKET=sessions_bucket, CANDIDATES_QUEUE_URL=candidates_queue,
               EVENT_BUS_NAME=bus["name"], UTILITY_MODEL="openai:scripted", OPENAI_BASE_URL=model.base_url,
               FACTS_KEY="k" * 48)

    def handler(name: str):
        service = f"knowledge-{name}-{uuid.uuid4().hex[:6]}"
        return load_handler(name, monkeypatch, env, POWERTOOLS_SERVICE_NAME=service)

    return handler, hits


def fifo_event(messages: list[dict]) -> dict:
    """The candidates ExtractFunction sent, as the FIFO queue hands them to ConsolidateFunction."""
    return {"Records": [{
        "messageId": f"m{index}", "receiptHandle": f"r{index}", "body": m["Body"], "md5OfBody": "0",
        "attributes": {**m["Attributes"], "ApproximateReceiveCount": "1", "SequenceNumber": str(index)},
        "messageAttributes": {}, "eventSource": "aws:sqs", "awsRegion": "us-east-1",
        "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:candidates.fifo",
    } for index, m in enumerate(messages)]}


def conversation_event() -> dict:
    """conversa-cliente.jsonl as `knowledge send-conversation` sends it: stamped recently (8 hours
    ago, past the demo's 6 idle hours), one turn a minute."""
    start = datetime.now(timezone.utc) - timedelta(hours=8)
    template = load_event("turn-complete.json")["Records"][0]
    records = []
    for index, line in enumerate((DEMO / "conversa-cliente.jsonl").read_text().splitlines()):
        turn = {**json.loads(line), "completed_at": (start + timedelta(minutes=index)).isoformat()}
        records.append({**template, "messageId": f"c{index}", "body": json.dumps(turn, ensure_ascii=False)})
    return {"Records": records}


def metrics(output: str, name: str) -> list:
    return [entry[name] for entry in (json.loads(line) for line in output.splitlines() if line.startswith("{"))
            if name in entry]


def test_the_demo_turn_is_learned_in_portuguese_and_passes_the_language_gate(demo, store, sqs, candidates_queue,
                                                                             capsys, model):
    handler, hits = demo
    extract = handler("extract")
    assert extract.lambda_handler(load_event("turn-complete.json"), LambdaContext()) == {"batchItemFailures": []}
    system = model.requests[0]["messages"][0]["content"]
    assert "write every description and body in Portuguese (pt-BR)" in system  # the demo's `language: pt-BR`
    candidates = drain(sqs, candidates_queue)
    output = capsys.readouterr().out
    assert metrics(output, "CandidateOtherLanguage") == []  # no candidate in another language

    consolidate = handler("consolidate")
    assert consolidate.lambda_handler(fifo_event(candidates), LambdaContext()) == {"batchItemFailures": []}
    merged = store.get(T, A, "cep-sudeste-cd-campinas")
    created = store.get(T, A, "despacho-no-mesmo-dia")
    assert (merged.reason, created.reason) == ("merged", "created")  # the scripted verdict "related" merged it
    assert merged.concept.body.startswith("Pedidos para CEPs 13000-13999 são atendidos pelo CD de Campinas")
    assert "[email]" in created.concept.body and "ana.souza" not in created.concept.body
    for stored in (merged, created):
        assert detect(f"{stored.concept.description}\n{stored.concept.body}") == "pt", stored.concept
    assert hits == [0, 1]  # extraction's fixture, then the judge's


def test_every_demo_concept_and_fixture_is_written_in_portuguese():
    for path in sorted(DEMO.glob("*.md")):
        concept = parse(path.read_text())
        assert detect(f"{concept.description}\n{concept.body}") == "pt", path.name
    extracted, verdict = RULES[0]["answer"], RULES[1]["answer"]
    for item in [*extracted, verdict]:  # some too short to tell on their own; none in another language
        assert not other_language(f"{item['description']}\n{item['body']}", "pt-BR"), item["description"]
    assert detect("\n".join(f"{i['description']}\n{i['body']}" for i in [*extracted, verdict])) == "pt"
    facts = RULES[2]["answer"]
    assert not any(other_language(fact["value"], "pt-BR") for fact in facts)  # values: too short to say more


def test_every_fixture_answers_the_prompt_the_product_sends_for_the_demo(demo, sqs, candidates_queue, s3,
                                                                          sessions_bucket):
    handler, hits = demo
    extract, consolidate, distill = handler("extract"), handler("consolidate"), handler("distill")
    assert extract.lambda_handler(load_event("turn-complete.json"), LambdaContext()) == {"batchItemFailures": []}
    assert consolidate.lambda_handler(fifo_event(drain(sqs, candidates_queue)), LambdaContext()) == {
        "batchItemFailures": []}
    assert extract.lambda_handler(conversation_event(), LambdaContext()) == {"batchItemFailures": []}
    drain(sqs, candidates_queue)  # the customer's turns teach the knowledge loop nothing ([]: no rule is theirs)
    report = distill.lambda_handler(load_event("distill.json"), LambdaContext())
    assert report["proposed"] == 4, report
    proposed = {p.proposal.name: p.proposal.value for p in ProposalStore(s3, sessions_bucket).list(T, A, "cus_77120")}
    assert proposed["pagamento_preferido"] == "Pix; cartão só em último caso"
    # Each rule answered a request it was written for; the only requests no rule answers are the
    # customer's own turns, which the demo teaches the knowledge loop nothing from.
    assert {index for index in hits if index is not None} == set(range(len(RULES)))
    assert hits.count(None) == 3
