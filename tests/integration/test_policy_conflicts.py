"""Policy against policy, through the studio API and PolicyReviewFunction (moto, the scripted judge): a saved
policy that contradicts another policy in force in the agent — its own, or its tenant's shared one — is
recorded as a conflict of two policies: both kept, neither retired, neither's text changed, both under the
studio's conflict filter, announced as knowledge_conflict; with no verdict the pair waits; once a later
review finds them agreeing, the conflict is lifted."""

from __future__ import annotations

import json

import pytest
from helpers.aws import drain, new_queue, sqs_event
from helpers.concepts import make_concept
from helpers.handlers import LambdaContext, load_handler
from helpers.studio import BASE, T, demo_studio, request
from test_policy_review import reviews_queued

from knowledge.store.keys import SHARED

A = "store-support"
IMPORTED = ("---\nname: frete-gratis-brasil\ndescription: Frete grátis para todo o Brasil, exceto produtos volumosos.\n"
            "type: policy\n---\n\nO frete é grátis para todo o Brasil em compras acima de R$ 199, exceto produtos "
            "volumosos.\n")
DEMO_POLICY = "frete-gratis-acima-199"  # the demo's: "Sul e Sudeste"


@pytest.fixture
def world(monkeypatch, store, bucket, sessions_bucket, sqs, bus, model):
    queue = new_queue(sqs)
    api = demo_studio(monkeypatch, store, bucket, sessions_bucket, POLICY_REVIEW_QUEUE_URL=queue)
    env = dict(KNOWLEDGE_BUCKET=bucket, SESSIONS_BUCKET=sessions_bucket, EVENT_BUS_NAME=bus["name"],
               UTILITY_MODEL="openai:judge", OPENAI_BASE_URL=model.base_url)

    def container():
        """A new studio container: its list reads what waits beside the concepts afresh."""
        handler = load_handler("studio_api", monkeypatch, env, STUDIO_ORIGIN="http://127.0.0.1:8080",
                               POLICY_REVIEW_QUEUE_URL=queue)

        def call(method, path, **kwargs):
            answer = handler.lambda_handler(request(method, path, **kwargs), LambdaContext())
            return answer["statusCode"], json.loads(answer["body"]), answer.get("headers", {})
        return call

    return {"api": api, "queue": queue, "env": env, "container": container}


def judge(model, contradicting: set[str]):
    """The judge: `contradicting` when the recorded claim is one of these policies' descriptions, else same."""
    def respond(request):
        recorded = json.loads(request["messages"][-1]["content"].split("\n", 1)[1])["recorded"]["description"]
        return json.dumps({"verdict": "contradicting" if recorded in contradicting else "same"})
    model.responder = respond


def save(world, sqs, markdown: str, agent: str = A) -> list[str]:
    status, body, _ = world["api"]("POST", f"/tenants/{T}/agents/{agent}/concepts", body={"markdown": markdown})
    assert status == 201, body
    return reviews_queued(sqs, world["queue"])


def conflicts(world) -> list[str]:
    status, page, _ = world["container"]()("GET", f"{BASE}/concepts", query={"status": "conflict"})
    assert status == 200
    return sorted(c["name"] for c in page["concepts"])


def test_an_imported_policy_contradicting_the_agents_is_a_conflict_of_two_policies_both_kept(
        monkeypatch, world, store, sqs, bus, model):
    demo = store.get(T, A, DEMO_POLICY)
    before = conflicts(world)  # the demo's own conflict of two sightings
    messages = save(world, sqs, IMPORTED)
    judge(model, {demo.concept.description})
    review = load_handler("policy_review", monkeypatch, world["env"])
    assert review.lambda_handler(sqs_event(*messages), LambdaContext()) == {"batchItemFailures": []}
    # Both kept as they were: neither retired, neither's text changed, no version written.
    assert store.get(T, A, DEMO_POLICY).version_id == demo.version_id
    assert store.get(T, A, "frete-gratis-brasil").reason == "created"
    assert conflicts(world) == sorted(before + [DEMO_POLICY, "frete-gratis-brasil"])
    kinds = {p.concept: (p.kind, p.policy) for p in store.waiting().of(T, A, DEMO_POLICY)
             + store.waiting().of(T, A, "frete-gratis-brasil")}
    assert kinds == {DEMO_POLICY: ("conflict", "frete-gratis-brasil"), "frete-gratis-brasil": ("conflict", DEMO_POLICY)}
    events = [json.loads(m["Body"]) for m in drain(sqs, bus["queue"])]
    assert {"detail-type": "knowledge_conflict", "detail": {
        "tenant": T, "agent": A, "name": "frete-gratis-brasil", "type": "policy", "outcome": "policy_conflict",
        "conflicts_with": DEMO_POLICY}} in [{k: e[k] for k in ("detail-type", "detail")} for e in events]
    # An operator edits the import to agree; its review lifts the conflict on both sides.
    current = store.get(T, A, "frete-gratis-brasil")
    judge(model, set())
    status, body, _ = world["api"]("PUT", f"{BASE}/concepts/frete-gratis-brasil", headers={"if-match": current.etag},
                                   body={"markdown": current.data.decode().replace("todo o Brasil", "Sul e Sudeste")})
    assert status == 200, body
    again = reviews_queued(sqs, world["queue"])
    assert review.lambda_handler(sqs_event(*again), LambdaContext()) == {"batchItemFailures": []}
    assert store.waiting().counts(T, A) == {}
    assert conflicts(world) == before


def test_with_no_verdict_two_policies_wait_and_nothing_is_recorded_as_a_conflict(monkeypatch, world, store, sqs):
    messages = save(world, sqs, IMPORTED)
    review = load_handler("policy_review", monkeypatch, world["env"], UTILITY_MODEL="")
    assert review.lambda_handler(sqs_event(*messages), LambdaContext()) == {"batchItemFailures": []}
    pairs = store.waiting().of(T, A, DEMO_POLICY)
    assert [(p.kind, p.policy, p.why) for p in pairs] == [("policy", "frete-gratis-brasil", "no_model")]
    assert DEMO_POLICY not in conflicts(world)


def test_a_shared_policy_contradicting_an_agents_own_is_a_conflict_in_that_agent(
        monkeypatch, world, store, sqs, model):
    demo_config = store.get_config(T, A)
    store.put_config(T, A, demo_config.text.replace("knowledge:\n", "knowledge:\n  shared: true\n", 1),
                     actor="operator:ana", if_match=demo_config.etag)
    demo = store.get(T, A, DEMO_POLICY)
    messages = save(world, sqs, IMPORTED, agent=SHARED)
    judge(model, {demo.concept.description})
    review = load_handler("policy_review", monkeypatch, world["env"], POLICY_REVIEW_QUEUE_URL=world["queue"])
    assert review.lambda_handler(sqs_event(*messages), LambdaContext()) == {"batchItemFailures": []}  # fanned out
    fanned = reviews_queued(sqs, world["queue"])
    assert [json.loads(m)["agent"] for m in fanned] == [A]
    assert review.lambda_handler(sqs_event(*fanned), LambdaContext()) == {"batchItemFailures": []}
    assert [(p.kind, p.policy) for p in store.waiting().of(T, A, DEMO_POLICY)] == [("conflict", "frete-gratis-brasil")]
    [shared_side] = store.waiting().of(T, A, "frete-gratis-brasil")
    assert (shared_side.kind, shared_side.policy, shared_side.shared) == ("conflict", DEMO_POLICY, True)
    assert store.get(T, A, DEMO_POLICY).version_id == demo.version_id
    assert DEMO_POLICY in conflicts(world)
