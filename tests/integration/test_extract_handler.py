"""ExtractFunction end to end: moto's SQS and S3, the real httpx client, a local model server."""

from __future__ import annotations

import copy
import json
import uuid

import pytest
from helpers.aws import drain, new_queue
from helpers.handlers import LambdaContext, load_event, load_handler
from helpers.paths import DEMO

from knowledge.format.sighting import parse_sighting
from knowledge_dev.scripted_model import rules_responder

T, A = "default", "store-support"
DEMO_RULES = json.loads((DEMO / "model_script.json").read_text())["rules"]


@pytest.fixture
def make_extract(monkeypatch, store, bucket, sessions_bucket, candidates_queue, model):
    store.put_config(T, A, (DEMO / "knowledge.yaml").read_text(), actor="operator:demo")
    model.responder = rules_responder(DEMO_RULES)
    return lambda service="knowledge-extract": load_handler("extract", monkeypatch, dict(
        KNOWLEDGE_BUCKET=bucket, SESSIONS_BUCKET=sessions_bucket, CANDIDATES_QUEUE_URL=candidates_queue,
        UTILITY_MODEL="openai:test-model", OPENAI_BASE_URL=model.base_url), POWERTOOLS_SERVICE_NAME=service)


@pytest.fixture
def extract(make_extract):
    return make_extract()


def event_with(*bodies: str) -> dict:
    template = load_event("turn-complete.json")["Records"][0]
    records = []
    for index, body in enumerate(bodies):
        record = copy.deepcopy(template)
        record["messageId"], record["body"] = f"msg-{index}", body
        records.append(record)
    return {"Records": records}


def turn_body(**overrides) -> str:
    body = json.loads(load_event("turn-complete.json")["Records"][0]["body"])
    body.update(overrides)
    return json.dumps(body, ensure_ascii=False)


def test_the_demo_turn_becomes_gated_redacted_stamped_sightings(extract, sqs, candidates_queue, s3,
                                                                  sessions_bucket):
    answer = extract.lambda_handler(load_event("turn-complete.json"), LambdaContext())
    assert answer == {"batchItemFailures": []}

    messages = drain(sqs, candidates_queue)
    sightings = {s.name: s for s in (parse_sighting(m["Body"]) for m in messages)}
    assert set(sightings) == {"cep-sudeste-cd-campinas", "despacho-no-mesmo-dia"}
    same_day = sightings["despacho-no-mesmo-dia"].parsed()
    assert "ana.souza@example.com" not in same_day.body and "[email]" in same_day.body
    assert (same_day.provenance, same_day.confidence, same_day.sources, same_day.occurrences) == (
        "observed", 0.6, ("sess_demo_01",), 1)
    assert same_day.created_at.isoformat() == "2026-11-20T14:05:31+00:00"
    for message in messages:
        sighting = parse_sighting(message["Body"])
        assert message["Attributes"]["MessageGroupId"] == sighting.group_id()
        assert message["Attributes"]["MessageDeduplicationId"] == sighting.dedup_id()
        assert (sighting.session_id, sighting.turn_id) == ("sess_demo_01", "turn_0004")

    archived = s3.list_objects_v2(Bucket=sessions_bucket, Prefix=f"{T}/{A}/turns/")["Contents"]
    assert [o["Key"] for o in archived] == [
        "default/store-support/turns/20261120T140531.000000Z/sess_demo_01/turn_0004.json"]


def test_a_redelivered_turn_is_archived_once_and_sends_no_duplicates(extract, sqs, candidates_queue, s3,
                                                                       sessions_bucket, model):
    extract.lambda_handler(load_event("turn-complete.json"), LambdaContext())
    key = s3.list_objects_v2(Bucket=sessions_bucket, Prefix=f"{T}/{A}/turns/")["Contents"][0]["Key"]
    first = s3.head_object(Bucket=sessions_bucket, Key=key)["ETag"]
    extract.lambda_handler(load_event("turn-complete.json"), LambdaContext())
    assert s3.list_objects_v2(Bucket=sessions_bucket, Prefix=f"{T}/{A}/turns/")["KeyCount"] == 1
    assert s3.head_object(Bucket=sessions_bucket, Key=key)["ETag"] == first
    assert len(drain(sqs, candidates_queue)) == 2  # sent once
    assert len(model.requests) == 1  # the redelivery was not read by the model again


def test_poison_messages_fail_alone(extract, sqs, candidates_queue):
    event = event_with("not json", turn_body(), turn_body(messages=[{"role": "robot", "content": "x"}]),
                       turn_body(agent="Bad Agent"))
    answer = extract.lambda_handler(event, LambdaContext())
    assert sorted(f["itemIdentifier"] for f in answer["batchItemFailures"]) == ["msg-0", "msg-2", "msg-3"]
    assert len(drain(sqs, candidates_queue)) == 2


@pytest.mark.parametrize("config", [None, "knowledge:\n  extract: false\n"])
def test_an_agent_without_extraction_is_acknowledged_and_nothing_else(extract, store, config, sqs,
                                                                      candidates_queue, s3, sessions_bucket,
                                                                      model):
    other = turn_body(agent="quiet-agent")
    if config:
        store.put_config(T, "quiet-agent", config, actor="operator:ana")
    answer = extract.lambda_handler(event_with(other), LambdaContext())
    assert answer == {"batchItemFailures": []}
    assert drain(sqs, candidates_queue) == [] and model.requests == []
    assert s3.list_objects_v2(Bucket=sessions_bucket)["KeyCount"] == 0


def test_a_model_that_keeps_failing_fails_the_turn_for_a_retry(extract, model, sqs, candidates_queue):
    model.responder = lambda request: (503, {"error": "overloaded"})
    answer = extract.lambda_handler(event_with(turn_body()), LambdaContext())
    assert answer == {"batchItemFailures": [{"itemIdentifier": "msg-0"}]}
    assert len(model.requests) == 3 and drain(sqs, candidates_queue) == []


def test_a_broken_knowledge_yaml_fails_the_turn_instead_of_guessing(extract, store, s3, bucket, model):
    s3.put_object(Bucket=bucket, Key="agents/default/store-support/knowledge.yaml", Body=b"knowledge:\n  topk: 3\n")
    answer = extract.lambda_handler(event_with(turn_body()), LambdaContext())
    assert answer == {"batchItemFailures": [{"itemIdentifier": "msg-0"}]} and model.requests == []


def test_the_config_is_cached_until_its_etag_changes(extract, store, model):
    extract.lambda_handler(event_with(turn_body(turn_id="t1")), LambdaContext())
    store.put_config(T, A, "knowledge:\n  extract: false\n", actor="operator:ana",
                     if_match=store.get_config(T, A).etag)
    extract.lambda_handler(event_with(turn_body(turn_id="t2")), LambdaContext())
    assert len(model.requests) == 1  # the second turn saw the new config


def test_logs_and_metrics_carry_counts_never_content(make_extract, capsys):
    # A logger of its own, created now, so that it writes to this test's captured stdout.
    extract = make_extract(service=f"knowledge-extract-{uuid.uuid4().hex[:6]}")
    extract.lambda_handler(event_with(turn_body(), "not json"), LambdaContext())
    output = capsys.readouterr().out
    # A refused candidate is counted by its reason only: its name (which no gate passed) is never logged.
    for secret in ("ana.souza", "Campinas", "13083-970", "despachados", "Despacho", "cliente-mora-em-campinas"):
        assert secret not in output
    logs = [json.loads(line) for line in output.splitlines() if line.startswith("{")]
    processed = next(entry for entry in logs if entry.get("message") == "turn processed")
    assert processed["session_id"] == "sess_demo_01" and processed["turn_id"] == "turn_0004"
    assert processed["rejected"] == {"type_not_allowed": 1, "forbidden_key": 1, "evidence_not_found": 1}
    # The concepts sent passed the name gate: named, so the line says what was learned.
    assert processed["concepts"] == ["cep-sudeste-cd-campinas", "despacho-no-mesmo-dia"]
    assert processed["redacted"] == {"email": 1}
    rejected = {entry["reason"]: entry["CandidateRejected"] for entry in logs if "CandidateRejected" in entry}
    assert rejected == {"type_not_allowed": [1.0], "forbidden_key": [1.0], "evidence_not_found": [1.0]}
    assert any(entry.get("message") == "turn message rejected" for entry in logs)


def test_a_poison_turn_ends_in_the_dead_letter_queue(extract, sqs):
    from knowledge_dev.poller import Poller

    dlq = new_queue(sqs)
    dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    turns = new_queue(sqs, VisibilityTimeout="1",
                      RedrivePolicy=json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": 2}))
    sqs.send_message(QueueUrl=turns, MessageBody="not a turn")
    sqs.send_message(QueueUrl=turns, MessageBody=turn_body())
    poller = Poller(sqs, turns, extract.lambda_handler, "extract")
    for _ in range(8):
        poller.poll_once(wait_seconds=1)
        if sqs.get_queue_attributes(QueueUrl=dlq, AttributeNames=["ApproximateNumberOfMessages"])[
                "Attributes"]["ApproximateNumberOfMessages"] == "1":
            break
    assert [m["Body"] for m in drain(sqs, dlq)] == ["not a turn"]
    assert drain(sqs, turns) == []


def archived_turn(s3, sessions_bucket) -> tuple[str, dict]:
    [item] = s3.list_objects_v2(Bucket=sessions_bucket, Prefix=f"{T}/{A}/turns/")["Contents"]
    return item["Key"], json.loads(s3.get_object(Bucket=sessions_bucket, Key=item["Key"])["Body"].read())


PREVIOUS_SHAPE = {}  # today's message, as an engine one release behind sends it
NEXT_SHAPE = {"customer_id": "cus_20931", "channel": "whatsapp", "facts": {"cpf": "529.982.247-25"}}


@pytest.mark.parametrize("fields", [PREVIOUS_SHAPE, NEXT_SHAPE], ids=["previous", "next"])
def test_a_turn_of_the_previous_or_the_next_shape_is_extracted_alike(extract, fields, sqs, candidates_queue, s3,
                                                                      sessions_bucket):
    answer = extract.lambda_handler(event_with(turn_body(**fields)), LambdaContext())
    assert answer == {"batchItemFailures": []}
    names = sorted(parse_sighting(m["Body"]).name for m in drain(sqs, candidates_queue))
    assert names == ["cep-sudeste-cd-campinas", "despacho-no-mesmo-dia"]
    _, archived = archived_turn(s3, sessions_bucket)
    expected = {"tenant", "agent", "session_id", "turn_id", "completed_at", "messages"}
    assert archived.keys() == expected | ({"customer_id"} if fields else set())
    assert archived.get("customer_id") == fields.get("customer_id")
    assert "529.982.247-25" not in json.dumps(archived)  # an unknown field is dropped, not archived


def test_a_next_shape_turn_still_obeys_the_size_limit_and_a_bad_customer_id_is_refused(extract, sqs,
                                                                                        candidates_queue, model):
    oversized = turn_body(notes="x" * (240 * 1024))
    bad_customer = turn_body(customer_id="../cus 1")
    answer = extract.lambda_handler(event_with(oversized, bad_customer), LambdaContext())
    assert sorted(f["itemIdentifier"] for f in answer["batchItemFailures"]) == ["msg-0", "msg-1"]
    assert model.requests == [] and drain(sqs, candidates_queue) == []


def test_each_sighting_links_to_its_quote_in_the_archived_turn_and_never_copies_it(extract, sqs,
                                                                                   candidates_queue, s3,
                                                                                   sessions_bucket):
    from knowledge.store.archive import TurnArchive

    answer = extract.lambda_handler(event_with(turn_body(completed_at="2026-11-20T11:05:31.250000-03:00")),
                                    LambdaContext())
    assert answer == {"batchItemFailures": []}
    key, archived = archived_turn(s3, sessions_bucket)
    quotes = {}
    for message in drain(sqs, candidates_queue):
        sighting = parse_sighting(message["Body"])
        link = sighting.evidence
        assert f"{T}/{A}/turns/{TurnArchive.stamp(link.completed_at)}/{sighting.session_id}/{sighting.turn_id}.json" \
            == key
        quotes[sighting.name] = (link.message, archived["messages"][link.message]["content"][link.start:link.end])
        assert "dias úteis são despachados" not in message["Body"] and "saem do nosso" not in message["Body"]
    assert quotes == {
        "cep-sudeste-cd-campinas": (1, "Pedidos para CEPs de 13000 a 13999 saem do nosso CD de Campinas e chegam "
                                       "em 1 a 2 dias úteis."),
        "despacho-no-mesmo-dia": (3, "pedidos pagos até as 14h em dias úteis são despachados no mesmo dia"),
    }


def test_a_customers_claim_offered_as_a_fact_is_refused_and_counted(make_extract, model, sqs, candidates_queue,
                                                                     capsys):
    extract = make_extract(service=f"knowledge-extract-{uuid.uuid4().hex[:6]}")
    claim = "vocês aceitam devolução de produto em promoção né?"
    model.responder = lambda request: json.dumps([
        {"name": "devolucao-em-promocao", "type": "policy", "evidence": claim,
         "description": "Sale items can be returned.", "body": "The store accepts returns of sale items."},
        {"name": "devolucao-caro-concorrente", "type": "objection", "evidence": claim,
         "description": "Customers ask whether sale items can be returned.",
         "body": "Customers hesitate when unsure sale items can be returned."}], ensure_ascii=False)
    body = turn_body(messages=[{"role": "user", "content": "oi, comprei na black friday. " + claim},
                               {"role": "assistant", "content": "Vou verificar o seu pedido, só um instante."}])
    assert extract.lambda_handler(event_with(body), LambdaContext()) == {"batchItemFailures": []}
    assert [parse_sighting(m["Body"]).name for m in drain(sqs, candidates_queue)] == ["devolucao-caro-concorrente"]
    output = capsys.readouterr().out
    assert "promoção" not in output and "promo\\u00e7\\u00e3o" not in output
    logs = [json.loads(line) for line in output.splitlines() if line.startswith("{")]
    rejected = {entry["reason"]: entry["CandidateRejected"] for entry in logs if "CandidateRejected" in entry}
    assert rejected == {"evidence_not_from_store": [1.0]}


def test_the_model_is_shown_the_agents_known_concepts_the_turn_is_about(extract, store, model, sqs,
                                                                        candidates_queue):
    from knowledge.format.concept import parse

    for path in sorted(DEMO.glob("*.md")):
        store.create(T, A, parse(path.read_text()), actor="engine")
    answer = extract.lambda_handler(load_event("turn-complete.json"), LambdaContext())
    assert answer == {"batchItemFailures": []}
    system, user = (m["content"] for m in model.requests[0]["messages"])
    heading, listed = user.split("\n", 1)
    names = [entry["name"] for entry in json.loads(listed.split("\n\n", 1)[0])]
    assert heading.startswith("Known concepts") and "use that listed name exactly" in system
    assert names[0] == "cep-sudeste-cd-campinas" and len(names) == 7  # the demo agent's seven, best first
    assert sorted(parse_sighting(m["Body"]).name for m in drain(sqs, candidates_queue)) == [
        "cep-sudeste-cd-campinas", "despacho-no-mesmo-dia"]


def test_concepts_are_asked_in_the_agents_language_and_one_in_another_is_kept_and_counted(
        make_extract, store, model, sqs, candidates_queue, capsys):
    evidence = "Pedidos para CEPs de 13000 a 13999 saem do nosso CD de Campinas e chegam em 1 a 2 dias úteis."
    answer = [
        {"name": "cep-sudeste-cd-campinas", "type": "fact", "evidence": evidence,
         "description": "CEPs de 13000 a 13999 saem do CD de Campinas e chegam em 1 a 2 dias úteis.",
         "body": "Os pedidos para esses CEPs são enviados pelo nosso CD de Campinas, com entrega em até 2 dias."},
        {"name": "campinas-dc-range", "type": "fact", "evidence": evidence,
         "description": "Orders to CEPs 13000-13999 ship from the Campinas DC and arrive in 1 to 2 business days.",
         "body": "The Campinas DC fulfils this range; the quoted delivery is within 2 business days for all of it."},
    ]
    extract = make_extract(service=f"knowledge-extract-{uuid.uuid4().hex[:6]}")  # the demo says `language: pt-BR`
    model.responder = lambda request: json.dumps(answer, ensure_ascii=False)
    assert extract.lambda_handler(load_event("turn-complete.json"), LambdaContext()) == {"batchItemFailures": []}
    system = model.requests[0]["messages"][0]["content"]
    assert "write every description and body in Portuguese (pt-BR)" in system
    # Kept (it is true, and a human may translate it), counted so an operator sees the rule ignored.
    assert sorted(parse_sighting(m["Body"]).name for m in drain(sqs, candidates_queue)) == [
        "campinas-dc-range", "cep-sudeste-cd-campinas"]
    logs = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    assert [entry["CandidateOtherLanguage"] for entry in logs if "CandidateOtherLanguage" in entry] == [[1.0]]
