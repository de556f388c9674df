"""A human's policy retires the observed concepts it contradicts: the studio queues a saved policy,
PolicyReviewFunction judges the closest observed concepts (moto's S3 and SQS, the scripted judge
server) and retires a contradicted one from recall, kept and restorable; with no usable verdict nothing
is written into the observed concept and the pair waits beside it for a human."""

from __future__ import annotations

import json

import pytest
from helpers.aws import drain, new_queue, sqs_event
from helpers.concepts import make_concept
from helpers.handlers import LambdaContext, load_handler
from helpers.studio import BASE, demo_studio

T, A = "default", "store-support"
POLICY = ("---\nname: prazo-de-troca\ndescription: Trocas e devoluções em até 30 dias corridos após a entrega.\n"
          "type: policy\n---\n\nA loja aceita trocas e devoluções em até 30 dias corridos após a entrega, "
          "com o produto na embalagem original.\n")
WRONG = make_concept("troca-em-7-dias", description="Trocas e devoluções só em até 7 dias após a entrega.",
                     body="O cliente tem até 7 dias após a entrega para pedir troca ou devolução.", confidence=0.8,
                     sources=("sess_1", "sess_2", "sess_3"), occurrences=3)
UNRELATED = make_concept("frete-campinas", description="Pedidos saem do CD de Campinas em 1 dia útil.",
                         body="O CD de Campinas despacha os pedidos em 1 dia útil.")


@pytest.fixture
def world(monkeypatch, store, bucket, sessions_bucket, sqs, bus, model):
    queue = new_queue(sqs)
    api = demo_studio(monkeypatch, store, bucket, sessions_bucket, POLICY_REVIEW_QUEUE_URL=queue)
    store.create(T, A, WRONG, actor="engine")
    store.create(T, A, UNRELATED, actor="engine")
    env = dict(KNOWLEDGE_BUCKET=bucket, SESSIONS_BUCKET=sessions_bucket, EVENT_BUS_NAME=bus["name"],
               UTILITY_MODEL="openai:judge", OPENAI_BASE_URL=model.base_url)
    return {"api": api, "queue": queue, "env": env}


def reviews_queued(sqs, queue) -> list[str]:
    """The policy reviews on the queue (each save also queues the model's word proposal, job `words`)."""
    return [m["Body"] for m in drain(sqs, queue) if json.loads(m["Body"]).get("job") != "words"]


def saved_policy(world, sqs) -> list[str]:
    status, body, _ = world["api"]("POST", f"{BASE}/concepts", body={"markdown": POLICY})
    assert status == 201, body
    return reviews_queued(sqs, world["queue"])


def judge_contradicting_for(model, names):
    def respond(request):
        user = request["messages"][-1]["content"]
        recorded = json.loads(user.split("\n", 1)[1])["recorded"]["description"]
        return json.dumps({"verdict": "contradicting" if any(n in recorded for n in names) else "same"})
    model.responder = respond


def test_a_saved_policy_retires_the_observed_concept_it_contradicts_kept_and_restorable(
        monkeypatch, world, store, sqs, bus, model):
    # A warm container that looks at the journal on every call (the deployed one looks every 5 s).
    retrieve = load_handler("retrieve", monkeypatch, world["env"], KNOWLEDGE_REFRESH_SECONDS="0")
    turn = {"tenant": T, "agent": A, "session_id": "sess_9", "message": "posso devolver em 7 dias após a entrega?"}
    assert "troca-em-7-dias" in [c["name"] for c in retrieve.lambda_handler(turn, LambdaContext())["concepts"]]
    messages = saved_policy(world, sqs)
    assert [json.loads(m) for m in messages] == [{"v": 1, "tenant": T, "agent": A, "name": "prazo-de-troca"}]
    judge_contradicting_for(model, ["7 dias"])
    review = load_handler("policy_review", monkeypatch, world["env"])
    assert review.lambda_handler(sqs_event(*messages), LambdaContext()) == {"batchItemFailures": []}
    assert 1 <= len(model.requests) <= 5  # one call per observed concept ranked close, at most five
    retired = store.get(T, A, "troca-em-7-dias")
    assert retired.concept.retired_by == "prazo-de-troca" and retired.reason == "retired"
    assert retired.concept.body == WRONG.body and retired.concept.confidence == 0.8  # kept as it was
    assert store.get(T, A, "frete-campinas").concept.retired_by is None
    events = [json.loads(m["Body"])["detail"] for m in drain(sqs, bus["queue"])]
    assert {"tenant": T, "agent": A, "name": "troca-em-7-dias", "type": "fact", "outcome": "retired"} in events

    # The studio lists it under Retired, and retrieval no longer injects it.
    status, page, _ = world["api"]("GET", f"{BASE}/concepts", query={"status": "retired"})
    assert status == 200 and [(c["name"], c["recall"], c["retired_by"]) for c in page["concepts"]] == [
        ("troca-em-7-dias", "retired", "prazo-de-troca")]
    assert "troca-em-7-dias" not in [c["name"] for c in retrieve.lambda_handler(turn, LambdaContext())["concepts"]]

    # One action brings it back: its version before the retirement, restored.
    [_, before] = store.versions(T, A, "troca-em-7-dias")[:2]
    status, _, _ = world["api"]("POST", f"{BASE}/concepts/troca-em-7-dias/versions/{before.version_id}/restore",
                                headers={"if-match": retired.etag})
    assert status == 200 and store.get(T, A, "troca-em-7-dias").concept.retired_by is None


def waiting(store, name):
    return [(p.kind, p.policy, p.why) for p in store.waiting().of(T, A, name)]


def test_with_no_model_nothing_is_written_and_the_policy_waits_beside_for_a_human(
        monkeypatch, world, store, sqs):
    before = store.get(T, A, "troca-em-7-dias")
    messages = saved_policy(world, sqs)
    review = load_handler("policy_review", monkeypatch, world["env"], UTILITY_MODEL="")
    assert review.lambda_handler(sqs_event(*messages), LambdaContext()) == {"batchItemFailures": []}
    # No entry, no link, no version: the observed concept is as the conversations left it.
    after = store.get(T, A, "troca-em-7-dias")
    assert (after.version_id, after.concept) == (before.version_id, before.concept)
    assert waiting(store, "troca-em-7-dias") == [("policy", "prazo-de-troca", "no_model")]
    # Reviewed again (the policy saved once more): the pair is one pair.
    review.lambda_handler(sqs_event(*messages), LambdaContext())
    assert waiting(store, "troca-em-7-dias") == [("policy", "prazo-de-troca", "no_model")]
    assert store.get(T, A, "troca-em-7-dias").version_id == before.version_id


def test_an_answer_that_is_no_verdict_is_asked_again_then_waits_and_writes_nothing(
        monkeypatch, world, store, sqs, model):
    before = {name: store.get(T, A, name).version_id for name in ("troca-em-7-dias", "frete-campinas")}
    messages = saved_policy(world, sqs)
    model.responder = lambda request: "Desculpe, não sei."
    review = load_handler("policy_review", monkeypatch, world["env"])
    for receive in (1, 2):  # as a judge outage is: the message fails and the queue brings it back
        assert review.lambda_handler(sqs_event(*messages, receive=receive), LambdaContext()) == {
            "batchItemFailures": [{"itemIdentifier": "m0"}]}
        assert store.waiting().counts(T, A) == {}
    assert review.lambda_handler(sqs_event(*messages, receive=3), LambdaContext()) == {"batchItemFailures": []}
    assert waiting(store, "troca-em-7-dias") == [("policy", "prazo-de-troca", "unusable")]
    assert {name: store.get(T, A, name).version_id for name in before} == before


def test_a_human_text_is_never_retired_and_an_observed_one_never_retires_anything(
        monkeypatch, world, store, sqs, model):
    current = store.get(T, A, "troca-em-7-dias")
    edited = store.replace(T, A, current.concept.replace(description="Trocas só em até 7 dias após a entrega."),
                           if_match=current.etag, actor="operator:bia", reason="edit")
    # The engine confirms it afterwards (body untouched): the text is still bia's.
    store.replace(T, A, edited.concept.replace(occurrences=4), if_match=edited.etag, actor="engine",
                  reason="confirmed")
    messages = saved_policy(world, sqs)
    judge_contradicting_for(model, ["7 dias"])
    review = load_handler("policy_review", monkeypatch, world["env"])
    review.lambda_handler(sqs_event(*messages), LambdaContext())
    stored = store.get(T, A, "troca-em-7-dias")
    edited = stored.concept
    assert edited.retired_by is None and "Policy [[" not in edited.body and stored.actor == "engine"  # not written
    # The conflict is recorded beside bia's text instead, for a human to decide.
    assert [(p.kind, p.policy) for p in store.waiting().of(T, A, "troca-em-7-dias")] == [("conflict", "prazo-de-troca")]
    # A policy is never retired, not even by hand: the line is refused with what to do.
    status, body, _ = world["api"]("POST", f"{BASE}/concepts", body={
        "markdown": POLICY.replace("prazo-de-troca", "outra-politica").replace("type: policy\n",
                                                                            "type: policy\nretired_by: prazo-de-troca\n")})
    assert status == 422 and "only an observed concept is retired by a policy" in json.dumps(body)
    # Saving an observed concept queues no review (only the words job).
    status, body, _ = world["api"]("POST", f"{BASE}/concepts", body={
        "markdown": POLICY.replace("prazo-de-troca", "outra-troca").replace("type: policy", "type: fact")
        .replace("---\n\nA loja", "provenance: observed\n---\n\nA loja")})
    assert status == 201, body
    assert [json.loads(m["Body"]) for m in drain(sqs, world["queue"])] == [
        {"v": 1, "tenant": T, "agent": A, "name": "outra-troca", "job": "words"}]  # no review: only the words


def test_a_message_the_studio_never_sends_fails_and_a_gone_policy_is_skipped(monkeypatch, world, store):
    review = load_handler("policy_review", monkeypatch, world["env"])
    answer = review.lambda_handler(sqs_event('{"v": 1, "tenant": "default", "agent": "../x", "name": "a"}',
                                             json.dumps({"v": 1, "tenant": T, "agent": A, "name": "nao-existe"})),
                                   LambdaContext())
    assert answer == {"batchItemFailures": [{"itemIdentifier": "m0"}]}


def test_a_policy_imported_from_the_studio_is_queued_for_its_review_as_a_saved_one_is(world, sqs):
    faq = "question,answer\nAceitam devolução depois de 30 dias?,Não: trocas e devoluções só até 30 dias da entrega.\n"
    files = [{"name": "faq.csv", "text": faq}]
    status, body, _ = world["api"]("POST", f"{BASE}/import", body={"files": files, "dry_run": True})
    assert status == 200, body
    assert drain(sqs, world["queue"]) == []  # a dry run writes nothing, queues nothing
    status, body, _ = world["api"]("POST", f"{BASE}/import", body={"files": files, "dry_run": False})
    assert status == 200 and body["created"] == 1, body
    queued = [json.loads(m) for m in reviews_queued(sqs, world["queue"])]
    assert len(queued) == 1 and queued[0]["tenant"] == T and queued[0]["agent"] == A
