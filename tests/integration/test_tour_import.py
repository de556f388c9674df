"""The README's tour, through the handlers, with the scripted model (which gives a policy review no usable
verdict, as an outage or a weak model would): the store's FAQ import leaves every concept the conversations
taught exactly as it was — text, links, version count — and the tour's freight question injects the same
concepts as before the import, plus only imported ones (issue 36)."""

from __future__ import annotations

import json
import uuid

from helpers.aws import drain, new_queue, sqs_event
from helpers.handlers import LambdaContext, load_event, load_handler
from helpers.paths import DEMO, ROOT

from knowledge.format.concept import parse
from knowledge_dev.scripted_model import rules_responder

T, A = "default", "store-support"
QUESTION = "Moro em Campinas, o frete é grátis?"
FAQ = ROOT / "tests" / "data" / "imports" / "faq-loja.csv"


def test_the_tours_faq_import_changes_no_concept_the_conversations_taught_nor_what_the_question_injects(
        monkeypatch, store, s3, bucket, sessions_bucket, sqs, bus, model):
    store.put_config(T, A, (DEMO / "knowledge.yaml").read_text(), actor="operator:demo")
    for path in sorted(DEMO.glob("*.md")):
        store.create(T, A, parse(path.read_text()), actor="engine")
    model.responder = rules_responder(json.loads((DEMO / "model_script.json").read_text())["rules"])
    queue = new_queue(sqs)
    env = dict(KNOWLEDGE_BUCKET=bucket, SESSIONS_BUCKET=sessions_bucket, EVENT_BUS_NAME=bus["name"],
               UTILITY_MODEL="openai:demo", OPENAI_BASE_URL=model.base_url, POLICY_REVIEW_QUEUE_URL=queue)
    retrieve = load_handler("retrieve", monkeypatch, env, KNOWLEDGE_REFRESH_SECONDS="0",
                            POWERTOOLS_SERVICE_NAME=f"knowledge-retrieve-{uuid.uuid4().hex[:6]}")

    def injected() -> dict[str, bool]:
        answer = retrieve.lambda_handler({"agent": A, "session_id": "sess_tour", "message": QUESTION}, LambdaContext())
        return {c["name"]: c["linked"] for c in answer["concepts"]}

    observed = {e.name for e in store.list(T, A) if store.get(T, A, e.name).concept.provenance == "observed"}
    before_versions = {name: [v.version_id for v in store.versions(T, A, name)] for name in observed}
    before_text = {name: store.get(T, A, name).data for name in observed}
    before = injected()

    importer = load_handler("import", monkeypatch, env)
    event = load_event("import.json")
    s3.put_object(Bucket=sessions_bucket, Key=event["prefix"] + FAQ.name, Body=FAQ.read_bytes())
    imported = {item["name"] for item in importer.lambda_handler(event, LambdaContext())["items"]
                if item["outcome"] == "created"}
    assert imported
    review = load_handler("policy_review", monkeypatch, env)
    pending = [m["Body"] for m in drain(sqs, queue)]
    for receive in (1, 2, 3):  # as the queue brings back what failed, up to the last attempt
        failed = review.lambda_handler(sqs_event(*pending, receive=receive), LambdaContext())["batchItemFailures"]
        pending = [pending[int(f["itemIdentifier"][1:])] for f in failed]
        pending += [m["Body"] for m in drain(sqs, queue)]  # what a review queued (none here)
    assert pending == []

    # Every concept the conversations taught: the same text and links, not one version more.
    assert {name: [v.version_id for v in store.versions(T, A, name)] for name in observed} == before_versions
    assert {name: store.get(T, A, name).data for name in observed} == before_text
    after = injected()
    assert {name: linked for name, linked in after.items() if name in before} == before
    assert set(after) - set(before) <= imported, set(after) - set(before)
    # What no judge decided waits beside the concepts, for the operator.
    assert store.waiting().counts(T, A)
