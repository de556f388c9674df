"""A policy of the tenant's shared scope retires what it contradicts in every agent that recalls it:
the studio queues the shared policy once, PolicyReviewFunction fans it out as one review per agent
that recalls shared knowledge (moto's S3 and SQS, the scripted judge server), and each agent's
contradicted observed concept leaves its recall; an agent that does not recall shared knowledge, or
has its own concept of the policy's name, keeps its concepts as they are."""

from __future__ import annotations

import json

import pytest
from helpers.aws import drain, new_queue, sqs_event
from helpers.concepts import make_concept
from helpers.handlers import LambdaContext, load_handler
from helpers.studio import T, demo_studio
from test_policy_review import POLICY, UNRELATED, WRONG, judge_contradicting_for, reviews_queued

from knowledge.store.keys import SHARED

SHARED_ON = "knowledge:\n  extract: true\n  retrieve: true\n  shared: true\n"
# whatsapp and site recall shared knowledge; vendas does not; balcao does, but keeps its own
# concept of the policy's name, which is what it recalls under that name.
RECALLING, NOT_RECALLING, OWN_OF_THE_NAME = ("site", "whatsapp"), "vendas", "balcao"
SHARED_BASE = f"/tenants/{T}/agents/{SHARED}"


@pytest.fixture
def world(monkeypatch, store, s3, bucket, sessions_bucket, sqs, bus, model):
    queue = new_queue(sqs)
    api = demo_studio(monkeypatch, store, bucket, sessions_bucket, POLICY_REVIEW_QUEUE_URL=queue)
    for agent in (*RECALLING, NOT_RECALLING, OWN_OF_THE_NAME):
        store.put_config(T, agent, SHARED_ON if agent != NOT_RECALLING else "knowledge:\n  extract: true\n",
                         actor="operator:ana")
        store.create(T, agent, WRONG, actor="engine")
        store.create(T, agent, UNRELATED, actor="engine")
    own = make_concept("prazo-de-troca", description="No balcão, trocas em até 7 dias com a nota fiscal.",
                       body="Na loja física, trocas em até 7 dias com a nota fiscal.", type="policy",
                       provenance="policy", confidence=1.0, sources=())
    store.create(T, OWN_OF_THE_NAME, own, actor="operator:ana")
    env = dict(KNOWLEDGE_BUCKET=bucket, SESSIONS_BUCKET=sessions_bucket, EVENT_BUS_NAME=bus["name"],
               UTILITY_MODEL="openai:judge", OPENAI_BASE_URL=model.base_url, POLICY_REVIEW_QUEUE_URL=queue)
    return {"api": api, "queue": queue, "env": env, "s3": s3, "bucket": bucket}


def saved_shared_policy(world, sqs) -> list[str]:
    status, body, _ = world["api"]("POST", f"{SHARED_BASE}/concepts", body={"markdown": POLICY})
    assert status == 201, body
    bodies = [m["Body"] for m in drain(sqs, world["queue"])]
    # The shared concept is taught its words once, in the shared scope (not once per agent that recalls it).
    assert [json.loads(b) for b in bodies if json.loads(b).get("job") == "words"] == [
        {"v": 1, "tenant": T, "agent": SHARED, "name": "prazo-de-troca", "job": "words"}]
    return [b for b in bodies if json.loads(b).get("job") != "words"]


def test_a_shared_policy_retires_the_contradicted_concept_of_every_agent_that_recalls_it(
        monkeypatch, world, store, sqs, bus, model):
    retrieve = load_handler("retrieve", monkeypatch, world["env"], KNOWLEDGE_REFRESH_SECONDS="0")
    turn = {"tenant": T, "agent": "whatsapp", "session_id": "sess_9",
            "message": "oi, boa tarde! posso devolver em 7 dias apos a entrega? pedido 48213"}
    assert "troca-em-7-dias" in [c["name"] for c in retrieve.lambda_handler(turn, LambdaContext())["concepts"]]

    messages = saved_shared_policy(world, sqs)
    assert [json.loads(m) for m in messages] == [{"v": 1, "tenant": T, "agent": SHARED, "name": "prazo-de-troca"}]
    judge_contradicting_for(model, ["7 dias"])
    review = load_handler("policy_review", monkeypatch, world["env"])
    assert review.lambda_handler(sqs_event(*messages), LambdaContext()) == {"batchItemFailures": []}
    assert model.requests == []  # the shared message only fans out: no agent's concept is judged in it
    fanned = [json.loads(m) for m in reviews_queued(sqs, world["queue"])]
    assert sorted(m["agent"] for m in fanned) == sorted([*RECALLING, OWN_OF_THE_NAME])
    assert all(m == {"v": 1, "tenant": T, "agent": m["agent"], "name": "prazo-de-troca", "shared": True}
               for m in fanned)

    assert review.lambda_handler(sqs_event(*map(json.dumps, fanned)), LambdaContext()) == {"batchItemFailures": []}
    assert 2 <= len(model.requests) <= 10  # the recalling agents' closest observed concepts, five each at most
    for agent in RECALLING:
        retired = store.get(T, agent, "troca-em-7-dias")
        assert (retired.concept.retired_by, retired.reason, retired.actor) == ("prazo-de-troca", "retired", "engine")
        assert retired.concept.body == WRONG.body  # kept as it was, restorable
        assert store.get(T, agent, "frete-campinas").concept.retired_by is None
    for agent in (NOT_RECALLING, OWN_OF_THE_NAME):
        kept = store.get(T, agent, "troca-em-7-dias")
        assert kept.concept.retired_by is None and kept.reason != "retired"
    assert store.get(T, OWN_OF_THE_NAME, "prazo-de-troca").concept.description.startswith("No balcão")
    assert store.get(T, SHARED, "prazo-de-troca").actor.startswith("operator:")  # the review never writes it
    events = [json.loads(m["Body"])["detail"] for m in drain(sqs, bus["queue"])]
    assert sorted(e["agent"] for e in events if e.get("outcome") == "retired") == sorted(RECALLING)

    # The agent recalls the shared policy now, and no longer the concept it retired.
    names = [c["name"] for c in retrieve.lambda_handler(turn, LambdaContext())["concepts"]]
    assert "prazo-de-troca" in names and "troca-em-7-dias" not in names
    status, page, _ = world["api"]("GET", f"/tenants/{T}/agents/whatsapp/concepts", query={"status": "retired"})
    assert status == 200 and [(c["name"], c["retired_by"]) for c in page["concepts"]] == [
        ("troca-em-7-dias", "prazo-de-troca")]

    # Received again (a retry of any of them): nothing more is written or judged.
    asked = len(model.requests)
    review.lambda_handler(sqs_event(*messages), LambdaContext())
    again = [json.loads(m) for m in reviews_queued(sqs, world["queue"])]
    assert review.lambda_handler(sqs_event(*map(json.dumps, again)), LambdaContext()) == {"batchItemFailures": []}
    assert len(model.requests) == asked
    assert all(store.get(T, a, "troca-em-7-dias").reason == "retired" for a in RECALLING)


def test_an_agent_that_stopped_recalling_shared_knowledge_is_not_reviewed_and_a_lost_fan_out_is_received_again(
        monkeypatch, world, store, sqs, model):
    messages = saved_shared_policy(world, sqs)
    review = load_handler("policy_review", monkeypatch, world["env"])
    sqs.delete_queue(QueueUrl=world["queue"])  # the fan-out cannot be sent: the message fails, to come back
    assert review.lambda_handler(sqs_event(*messages), LambdaContext()) == {"batchItemFailures": [
        {"itemIdentifier": "m0"}]}

    # An agent whose knowledge.yaml was written invalid (aws s3 cp) is off: it blocks no other agent's review.
    world["s3"].put_object(Bucket=world["bucket"], Key=f"agents/{T}/whatsapp/knowledge.yaml",
                           Body=b"knowledge:\n  shared: [yes\n")
    world["queue"] = new_queue(sqs)
    review = load_handler("policy_review", monkeypatch, world["env"], POLICY_REVIEW_QUEUE_URL=world["queue"])
    assert review.lambda_handler(sqs_event(*messages), LambdaContext()) == {"batchItemFailures": []}
    assert sorted(json.loads(m)["agent"] for m in reviews_queued(sqs, world["queue"])) == ["balcao", "site"]

    # A review queued for an agent that has since turned shared knowledge off: skipped, nothing judged.
    store.put_config(T, "site", "knowledge:\n  extract: true\n", actor="operator:ana",
                     if_match=store.get_config(T, "site").etag)
    judge_contradicting_for(model, ["7 dias"])
    message = json.dumps({"v": 1, "tenant": T, "agent": "site", "name": "prazo-de-troca", "shared": True})
    assert review.lambda_handler(sqs_event(message), LambdaContext()) == {"batchItemFailures": []}
    assert model.requests == [] and store.get(T, "site", "troca-em-7-dias").concept.retired_by is None


@pytest.mark.parametrize("body", [
    {"v": 1, "tenant": T, "agent": SHARED, "name": "prazo-de-troca", "job": "words", "names": ["a", "b"]},  # not first
    {"v": 1, "tenant": T, "agent": SHARED, "name": "prazo-de-troca", "shared": True},  # fanned out to itself
    {"v": 1, "tenant": T, "agent": "_outro", "name": "prazo-de-troca"},
    {"v": 1, "tenant": T, "agent": "site", "name": "prazo-de-troca", "shared": "yes"},
    {"v": 1, "tenant": T, "agent": "site", "name": "prazo-de-troca", "job": "words", "shared": True},
])
def test_a_shared_message_the_studio_never_sends_fails(monkeypatch, world, body):
    review = load_handler("policy_review", monkeypatch, world["env"])
    assert review.lambda_handler(sqs_event(json.dumps(body)), LambdaContext()) == {"batchItemFailures": [
        {"itemIdentifier": "m0"}]}


def test_a_policy_imported_into_the_shared_scope_is_queued_for_its_review_as_a_saved_one_is(world, sqs):
    faq = "question,answer\nAceitam devolução depois de 30 dias?,Não: trocas e devoluções só até 30 dias da entrega.\n"
    status, body, _ = world["api"]("POST", f"{SHARED_BASE}/import", body={"files": [{"name": "faq.csv", "text": faq}],
                                                                         "dry_run": False})
    assert status == 200 and body["created"] == 1, body
    assert [json.loads(m) for m in reviews_queued(sqs, world["queue"])] == [
        {"v": 1, "tenant": T, "agent": SHARED, "name": "aceitam-devolucao-depois-de-30-dias"}]


def test_a_policy_copied_to_the_shared_scope_is_queued_for_its_review(world, store, sqs):
    store.create(T, "site", make_concept("entrega-agendada", description="Entrega agendada em até 15 dias úteis.",
                                         body="A entrega agendada é feita em até 15 dias úteis.", type="policy",
                                         provenance="policy", confidence=1.0, sources=()), actor="operator:ana")
    drain(sqs, world["queue"])
    status, body, _ = world["api"]("POST", f"/tenants/{T}/agents/site/concepts/entrega-agendada/share",
                                   body={"move": False})
    assert status == 201, body
    assert [json.loads(m) for m in reviews_queued(sqs, world["queue"])] == [
        {"v": 1, "tenant": T, "agent": SHARED, "name": "entrega-agendada"}]
    # An observed concept copied there is no policy: nothing to review.
    status, _, _ = world["api"]("POST", f"/tenants/{T}/agents/site/concepts/frete-campinas/share", body={"move": False})
    assert status == 201 and reviews_queued(sqs, world["queue"]) == []


class RefusingQueue:
    """An SQS client whose SendMessageBatch refuses the last entry of each request, as SQS may."""

    def __init__(self):
        self.sent = []

    def send_message_batch(self, QueueUrl, Entries):  # noqa: N803 - boto3's parameter names
        self.sent += Entries[:-1]
        return {"Successful": [{"Id": e["Id"]} for e in Entries[:-1]],
                "Failed": [{"Id": Entries[-1]["Id"], "SenderFault": False, "Code": "InternalError"}]}


def test_a_fan_out_the_queue_refused_part_of_raises_so_the_message_comes_back():
    from knowledge.errors import ReviewsNotQueued
    from knowledge.learning.policy_review import PolicyReviewQueue

    client = RefusingQueue()
    with pytest.raises(ReviewsNotQueued, match="1 of 3 shared policy reviews not queued"):
        PolicyReviewQueue(client, "https://queue", words=False).fan_out(T, ["a", "b", "c"], "prazo-de-troca")
    assert [json.loads(e["MessageBody"])["agent"] for e in client.sent] == ["a", "b"]


def test_without_a_queue_to_fan_out_on_a_shared_policy_is_skipped_counted_and_nothing_is_judged(
        monkeypatch, world, store, sqs, model, capsys):
    messages = saved_shared_policy(world, sqs)
    review = load_handler("policy_review", monkeypatch, world["env"], POLICY_REVIEW_QUEUE_URL="")
    assert review.lambda_handler(sqs_event(*messages), LambdaContext()) == {"batchItemFailures": []}
    assert model.requests == [] and drain(sqs, world["queue"]) == []
    skipped = [json.loads(line) for line in capsys.readouterr().out.splitlines() if '"PolicyReviewSkipped"' in line]
    assert [m["reason"] for m in skipped] == ["no_queue"]
