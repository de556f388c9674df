"""ConsolidateFunction end to end: moto's S3, SQS and EventBridge, and a local model server."""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone

import pytest
from helpers.aws import drain
from helpers.concepts import make_concept
from helpers.handlers import LambdaContext, load_handler

from knowledge.format.sighting import Sighting
from shared.errors import Conflict

T, A = "default", "store-support"
FRETE = dict(description="Free shipping above R$199 in the Southeast.",
             body="Orders above R$199 ship free to the South and Southeast regions.")


def sighting(session: str, turn: str = "t1", name: str = "frete-gratis", **fields) -> Sighting:
    moment = datetime(2026, 11, 20, 14, 5, 31, tzinfo=timezone.utc)
    concept = make_concept(name, sources=(session,), created_at=moment, updated_at=moment, **{**FRETE, **fields})
    return Sighting.of(T, A, session, turn, concept)


def event(*sightings: Sighting) -> dict:
    return {"Records": [{
        "messageId": f"m{index}", "receiptHandle": f"r{index}", "body": s.body(),
        "attributes": {"MessageGroupId": s.group_id(), "MessageDeduplicationId": s.dedup_id(),
                       "ApproximateReceiveCount": "1", "SentTimestamp": "0", "SenderId": "x",
                       "ApproximateFirstReceiveTimestamp": "0", "SequenceNumber": str(index)},
        "messageAttributes": {}, "md5OfBody": "0", "eventSource": "aws:sqs",
        "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:candidates.fifo", "awsRegion": "us-east-1",
    } for index, s in enumerate(sightings)]}




def published(sqs, bus) -> list[dict]:
    return [json.loads(m["Body"]) for m in drain(sqs, bus["queue"])]


@pytest.fixture
def env(monkeypatch, bucket, sessions_bucket, bus, model):
    return dict(KNOWLEDGE_BUCKET=bucket, SESSIONS_BUCKET=sessions_bucket, EVENT_BUS_NAME=bus["name"],
                UTILITY_MODEL="openai:judge", OPENAI_BASE_URL=model.base_url)


@pytest.fixture
def consolidate(monkeypatch, env):
    return load_handler("consolidate", monkeypatch, env)


def run(handler, *sightings):
    return handler.lambda_handler(event(*sightings), LambdaContext())


def test_a_new_name_is_created_and_announced(consolidate, store, sqs, bus, model):
    assert run(consolidate, sighting("sess_1")) == {"batchItemFailures": []}
    stored = store.get(T, A, "frete-gratis")
    assert stored.concept.occurrences == 1 and (stored.actor, stored.reason) == ("engine", "created")
    [announced] = published(sqs, bus)
    assert announced["detail-type"] == "knowledge_learned"
    assert announced["detail"] == {"tenant": T, "agent": A, "name": "frete-gratis", "type": "fact",
                                   "outcome": "created"}
    assert model.requests == []


def test_the_same_claim_confirms_without_a_model_call(consolidate, store, model):
    run(consolidate, sighting("sess_1"))
    run(consolidate, sighting("sess_2", description="free shipping above r$199 in the southeast"))
    concept = store.get(T, A, "frete-gratis").concept
    assert (concept.occurrences, concept.sources, concept.confidence) == (2, ("sess_1", "sess_2"), 0.7)
    assert concept.description == FRETE["description"]
    assert model.requests == []
    assert [v.reason for v in store.versions(T, A, "frete-gratis")] == ["confirmed", "created"]


def test_a_related_claim_is_merged_by_one_model_call(consolidate, store, model, script):
    run(consolidate, sighting("sess_1"))
    script.replies.append(json.dumps({"verdict": "related",
                                      "description": "Free shipping above R$199 in the South and Southeast.",
                                      "body": "Orders above R$199 ship free to the South and Southeast; "
                                              "it applies after discounts."}))
    run(consolidate, sighting("sess_2", description="The R$199 threshold applies after discounts.",
                              body="The R$199 free-shipping threshold is checked after discounts."))
    concept = store.get(T, A, "frete-gratis").concept
    assert concept.body.endswith("it applies after discounts.") and concept.occurrences == 2
    assert concept.confidence == 0.7 and not concept.in_conflict
    assert len(model.requests) == 1
    judged = json.loads(model.requests[0]["messages"][1]["content"].split("\n", 1)[1])
    assert judged["recorded"]["body"] == FRETE["body"]
    assert store.versions(T, A, "frete-gratis")[0].reason == "merged"


def test_a_contradicting_claim_is_appended_and_raises_a_conflict(consolidate, store, script, sqs, bus):
    run(consolidate, sighting("sess_1"))
    script.replies.append('{"verdict": "contradicting"}')
    run(consolidate, sighting("sess_2", description="Free shipping above R$299 in the Southeast.",
                              body="Orders above R$299 ship free."))
    concept = store.get(T, A, "frete-gratis").concept
    assert concept.in_conflict and concept.confidence == 0.4
    assert concept.body.startswith(FRETE["body"] + "\n\n## Contradiction\n\nSession sess_2 (")
    assert "> Orders above R$299 ship free." in concept.body
    kinds = [e["detail-type"] for e in published(sqs, bus)]
    assert kinds == ["knowledge_learned", "knowledge_conflict"]
    assert store.versions(T, A, "frete-gratis")[0].reason == "contradiction"


@pytest.mark.parametrize("model_behaviour", ["garbage", "none"])
def test_when_unsure_the_outcome_is_contradicting(monkeypatch, env, store, script, model_behaviour):
    if model_behaviour == "garbage":
        script.default = "I think they are basically the same, merge them!"
    else:
        env = dict(env, UTILITY_MODEL="", OPENAI_BASE_URL="")  # no model: the parameters left empty
    handler = load_handler("consolidate", monkeypatch, env)
    run(handler, sighting("sess_1"))
    run(handler, sighting("sess_2", description="Free shipping above R$299.", body="Orders above R$299 ship free."))
    concept = store.get(T, A, "frete-gratis").concept
    assert concept.in_conflict and concept.confidence == 0.4


def test_a_model_outage_is_retried_by_the_queue_and_never_judged(monkeypatch, env, store, script, model):
    handler = load_handler("consolidate", monkeypatch, env)
    run(handler, sighting("sess_1"))
    different = sighting("sess_2", description="Free shipping above R$299.", body="Orders above R$299 ship free.")
    script.default = (503, {"error": "overloaded"})
    for _ in range(2):  # down for two deliveries: each fails the record, nothing is written
        assert run(handler, different) == {"batchItemFailures": [{"itemIdentifier": "m0"}]}
    assert [v.reason for v in store.versions(T, A, "frete-gratis")] == ["created"]
    script.default = "[]"
    script.replies.append(json.dumps({"verdict": "related", "description": "Free shipping above R$199; R$299 in the North.",
                                      "body": "Orders above R$199 ship free; in the North, above R$299."}))
    assert run(handler, different) == {"batchItemFailures": []}  # back on the third
    concept = store.get(T, A, "frete-gratis").concept
    assert not concept.in_conflict and concept.occurrences == 2
    assert [v.reason for v in store.versions(T, A, "frete-gratis")] == ["merged", "created"]


def test_a_policy_concept_is_never_rewritten_by_a_merge(consolidate, store, script):
    store.create(T, A, make_concept("frete-gratis", provenance="policy", confidence=0.95, sources=(), **FRETE),
                 actor="operator:ana")
    script.replies.append(json.dumps({"verdict": "related", "description": "Rewritten.", "body": "Rewritten."}))
    run(consolidate, sighting("sess_2", description="Shipping costs nothing over R$199 after discounts.",
                              body="After discounts, R$199 or more ships at no cost."))
    concept = store.get(T, A, "frete-gratis").concept
    assert (concept.description, concept.body) == (FRETE["description"], FRETE["body"])
    assert (concept.occurrences, concept.sources, concept.confidence) == (2, ("sess_2",), 0.95)
    script.replies.append('{"verdict": "contradicting"}')
    run(consolidate, sighting("sess_3", description="Free shipping above R$299.", body="Over R$299 only."))
    assert store.get(T, A, "frete-gratis").concept.in_conflict


OTHER_CLAIM = dict(description="Free shipping above R$299 everywhere.", body="Orders above R$299 ship free anywhere.")


@pytest.mark.parametrize("judge", ["no model", "prose"])
def test_an_unjudged_sighting_waits_beside_a_policy_and_writes_nothing_into_it(monkeypatch, env, store, script, sqs,
                                                                               bus, judge):
    if judge == "no model":
        env = dict(env, UTILITY_MODEL="")
    else:
        script.default = "I think these are probably about the same thing."  # complete, but no verdict
    handler = load_handler("consolidate", monkeypatch, env)
    created = store.create(T, A, make_concept("frete-gratis", provenance="policy", confidence=0.9, sources=(),
                                              **FRETE), actor="operator:ana")
    if judge == "prose":  # as a judge outage is: asked again on the sighting's next deliveries
        for receive in ("1", "2"):
            record = event(sighting("sess_2", **OTHER_CLAIM))
            record["Records"][0]["attributes"]["ApproximateReceiveCount"] = receive
            assert handler.lambda_handler(record, LambdaContext()) == {"batchItemFailures": [{"itemIdentifier": "m0"}]}
        record["Records"][0]["attributes"]["ApproximateReceiveCount"] = "3"
        assert handler.lambda_handler(record, LambdaContext()) == {"batchItemFailures": []}
    else:
        assert run(handler, sighting("sess_2", **OTHER_CLAIM)) == {"batchItemFailures": []}
    # No entry, no link, no version: the policy is as the operator wrote it.
    stored = store.get(T, A, "frete-gratis")
    assert (stored.version_id, stored.concept) == (created.version_id, created.concept)
    [pair] = store.waiting().of(T, A, "frete-gratis")
    assert (pair.kind, pair.session_id, pair.why) == ("sighting", "sess_2", "no_model" if judge == "no model"
                                                      else "unusable")
    assert pair.description == OTHER_CLAIM["description"] and pair.body == OTHER_CLAIM["body"]
    [announced] = published(sqs, bus)
    assert announced["detail-type"] == "knowledge_learned" and announced["detail"]["outcome"] == "waiting"


def test_an_unjudged_sighting_waits_beside_an_operators_body_but_contradicts_the_engines(monkeypatch, env, store):
    handler = load_handler("consolidate", monkeypatch, env, UTILITY_MODEL="")
    ana = store.create(T, A, make_concept("frete-gratis", confidence=0.7, sources=("sess_0", "sess_1"), **FRETE),
                       actor="operator:ana")
    store.create(T, A, make_concept("trocas", confidence=0.7, sources=("sess_0", "sess_1"),
                                    description="Returns within 30 days.", body="Returns are accepted within 30 days."),
                 actor="engine")
    run(handler, sighting("sess_2", **OTHER_CLAIM))
    run(handler, sighting("sess_2", name="trocas", description="Returns within 7 days.",
                          body="Returns are accepted within 7 days."))
    run(handler, sighting("sess_3", description="Free shipping above R$399.", body="Orders above R$399 ship free."))
    kept = store.get(T, A, "frete-gratis")
    assert kept.version_id == ana.version_id and kept.concept == ana.concept  # the operator's text, untouched
    assert sorted(p.session_id for p in store.waiting().of(T, A, "frete-gratis")) == ["sess_2", "sess_3"]
    engine = store.get(T, A, "trocas").concept
    assert engine.in_conflict and engine.confidence == 0.4  # the engine's own guess still goes to a human
    assert store.waiting().counts(T, A) == {"frete-gratis": 2}


def test_an_operators_body_confirmed_by_the_engine_is_still_never_rewritten_by_a_merge(consolidate, store, script):
    created = store.create(T, A, make_concept("frete-gratis", confidence=0.7, sources=("sess_0", "sess_1"), **FRETE),
                           actor="engine")
    edited = store.replace(T, A, created.concept.replace(body="Pedidos acima de R$199 têm frete grátis no Sul e no "
                                                            "Sudeste, conferido pelo time."),
                           if_match=created.etag, actor="operator:ana", reason="edit")
    run(consolidate, sighting("sess_2", description=FRETE["description"], body=edited.concept.body))  # a repeat
    assert store.get(T, A, "frete-gratis").actor == "engine"  # the engine wrote the current version since
    script.replies.append(json.dumps({"verdict": "related", "description": "Rewritten.", "body": "Rewritten."}))
    run(consolidate, sighting("sess_3", description="Shipping costs nothing over R$199 after discounts.",
                              body="After discounts, R$199 or more ships at no cost."))
    stored = store.get(T, A, "frete-gratis")
    assert stored.reason == "kept_beside" and stored.concept.body.startswith(edited.concept.body)  # ana's text kept
    assert "Rewritten." not in stored.concept.body


def test_the_same_sighting_twice_counts_once(consolidate, store, sqs, bus):
    run(consolidate, sighting("sess_1"))
    run(consolidate, sighting("sess_2"))
    run(consolidate, sighting("sess_2"))  # redelivery, or a backfill replay
    concept = store.get(T, A, "frete-gratis").concept
    assert (concept.occurrences, concept.sources) == (2, ("sess_1", "sess_2"))
    assert len(published(sqs, bus)) == 2


def test_a_crash_after_the_write_is_recognised_on_redelivery(consolidate, store, monkeypatch, s3, sessions_bucket):
    from knowledge.store.ledgers import SightingLedger

    run(consolidate, sighting("sess_1"))
    original = SightingLedger.applied
    calls = {"n": 0}

    def crash_once(self, s):
        calls["n"] += 1
        if calls["n"] == 1:
            raise RuntimeError("the container died here")
        return original(self, s)

    monkeypatch.setattr(SightingLedger, "applied", crash_once)
    with pytest.raises(RuntimeError):
        consolidate.consolidator.apply(sighting("sess_2"))
    assert store.get(T, A, "frete-gratis").concept.occurrences == 2  # written before the crash
    assert run(consolidate, sighting("sess_2")) == {"batchItemFailures": []}
    assert store.get(T, A, "frete-gratis").concept.occurrences == 2
    assert SightingLedger(s3, sessions_bucket).begin(sighting("sess_2"), None).state == "applied"


def test_a_malformed_message_fails_alone_and_other_concepts_go_on(consolidate, store):
    good = sighting("sess_1", name="outro-conceito")
    records = event(sighting("sess_1"), good)
    records["Records"][0]["body"] = '{"v": 1, "tenant": "default"}'
    answer = consolidate.lambda_handler(records, LambdaContext())
    assert answer == {"batchItemFailures": [{"itemIdentifier": "m0"}]}
    assert store.get(T, A, "outro-conceito").concept.occurrences == 1


def test_a_failed_sighting_holds_back_the_rest_of_its_concept(consolidate, store):
    first, second = sighting("sess_1"), sighting("sess_2")
    records = event(first, second)
    records["Records"][0]["body"] = records["Records"][0]["body"].replace('"tenant":"default"', '"tenant":"Default!"')
    answer = consolidate.lambda_handler(records, LambdaContext())
    assert sorted(f["itemIdentifier"] for f in answer["batchItemFailures"]) == ["m0", "m1"]
    assert store.find(T, A, "frete-gratis") is None


def test_events_never_carry_content(consolidate, script, sqs, bus):
    run(consolidate, sighting("sess_1"))
    script.replies.append('{"verdict": "contradicting"}')
    run(consolidate, sighting("sess_2", description="Free shipping above R$299.", body="Over R$299 only."))
    for entry in published(sqs, bus):
        assert set(entry["detail"]) == {"tenant", "agent", "name", "type", "outcome"}
        assert "R$" not in json.dumps(entry)


def test_fifty_parallel_sightings_and_an_operator_edit_all_survive(consolidate, store, script):
    """Not serialized by FIFO on purpose: 50 writers race on one concept while an operator edits it."""
    # After the operator's edit the record no longer reads word for word like the sightings: the
    # judge is asked, and says they state the same thing.
    script.default = '{"verdict": "same"}'
    run(consolidate, sighting("sess_00"))
    pending = [sighting(f"sess_{i:02d}", turn=f"t{i}") for i in range(1, 50)]
    edit_done = threading.Event()

    def operator_edit():
        while True:  # what the studio does when told a newer version exists: re-read, re-apply
            current = store.get(T, A, "frete-gratis")
            edited = current.concept.replace(description="Free shipping above R$199 (South and Southeast).")
            try:
                store.replace(T, A, edited, if_match=current.etag, actor="operator:ana", reason="edit")
                edit_done.set()
                return
            except Conflict:
                continue

    retries = []
    real_flush = consolidate.consolidator.counters.flush

    def flush(**kwargs):
        retries.append(consolidate.consolidator.counters.get("ConsolidationRetry"))
        real_flush(**kwargs)

    consolidate.consolidator.counters.flush = flush

    def deliver(s):
        return run(consolidate, s)["batchItemFailures"]

    with ThreadPoolExecutor(max_workers=12) as pool:
        editor = pool.submit(operator_edit)
        failures = list(pool.map(deliver, pending))
        editor.result()
    # What the queue would do with a sighting that lost every race: deliver it again.
    retry = [s for s, failed in zip(pending, failures) if failed]
    for _ in range(10):
        if not retry:
            break
        retry = [s for s in retry if run(consolidate, s)["batchItemFailures"]]
    assert not retry and edit_done.is_set()

    concept = store.get(T, A, "frete-gratis").concept
    assert concept.occurrences == 50 and len(concept.sources) == 50 and len(set(concept.sources)) == 50
    assert concept.confidence == 0.95
    assert concept.description == "Free shipping above R$199 (South and Southeast)."
    history = store.versions(T, A, "frete-gratis")
    assert len(history) == 51 and "operator:ana" in {v.actor for v in history}  # every write is a version
    assert sum(retries) > 0  # the race was real: compare-and-swap lost and re-decided


def test_the_candidate_event_creates_its_concept(consolidate, store):
    from helpers.handlers import load_event

    answer = consolidate.lambda_handler(load_event("candidate.json"), LambdaContext())
    assert answer == {"batchItemFailures": []}
    concept = store.get(T, A, "despacho-no-mesmo-dia").concept
    assert concept.sources == ("sess_demo_01",) and "[email]" in concept.body


def test_an_operator_edit_inside_the_crash_window_still_counts_the_sighting_once(consolidate, store, monkeypatch):
    from knowledge.curation.studio import Operator, Studio
    from knowledge.store.ledgers import SightingLedger

    run(consolidate, sighting("sess_1"))
    original = SightingLedger.applied
    monkeypatch.setattr(SightingLedger, "applied", lambda self, s: (_ for _ in ()).throw(RuntimeError("died")))
    with pytest.raises(RuntimeError):
        consolidate.consolidator.apply(sighting("sess_2"))
    monkeypatch.setattr(SightingLedger, "applied", original)
    current = store.get(T, A, "frete-gratis")  # the operator edits before the message comes back
    Studio(store).save(Operator("ana", frozenset({T})), T, A, "frete-gratis",
                       current.text.replace("Free shipping above R$199 in the Southeast.", "Free shipping over R$199."),
                       current.etag)
    assert run(consolidate, sighting("sess_2")) == {"batchItemFailures": []}
    concept = store.get(T, A, "frete-gratis").concept
    assert concept.occurrences == 2 and concept.description == "Free shipping over R$199."


def test_a_sighting_counts_once_across_delete_undelete_and_later_sightings_in_its_crash_window(
        consolidate, store, monkeypatch):
    """More than 20 writes, a delete and an undelete between a crash and the redelivery."""
    from knowledge.store.ledgers import SightingLedger

    run(consolidate, sighting("sess_0"))
    original = SightingLedger.applied
    monkeypatch.setattr(SightingLedger, "applied", lambda self, s: (_ for _ in ()).throw(RuntimeError("died")))
    with pytest.raises(RuntimeError):
        consolidate.consolidator.apply(sighting("sess_crash"))
    monkeypatch.setattr(SightingLedger, "applied", original)
    for i in range(1, 25):
        run(consolidate, sighting(f"sess_{i}", turn=f"t{i}"))
    store.delete(T, A, "frete-gratis", actor="operator:ana")
    store.undelete(T, A, "frete-gratis", actor="operator:ana")
    assert run(consolidate, sighting("sess_crash")) == {"batchItemFailures": []}
    concept = store.get(T, A, "frete-gratis").concept
    assert concept.occurrences == 26 and "sess_crash" in concept.sources


def test_a_crash_after_the_pending_marker_and_before_the_write_applies_on_redelivery(consolidate, store, monkeypatch):
    from knowledge.store.concepts import ConceptStore

    run(consolidate, sighting("sess_1"))
    original = ConceptStore.replace
    monkeypatch.setattr(ConceptStore, "replace", lambda *a, **k: (_ for _ in ()).throw(RuntimeError("died")))
    with pytest.raises(RuntimeError):
        consolidate.consolidator.apply(sighting("sess_2"))
    monkeypatch.setattr(ConceptStore, "replace", original)
    assert store.get(T, A, "frete-gratis").concept.occurrences == 1
    assert run(consolidate, sighting("sess_2")) == {"batchItemFailures": []}
    assert run(consolidate, sighting("sess_2")) == {"batchItemFailures": []}
    assert store.get(T, A, "frete-gratis").concept.occurrences == 2


def test_an_unreadable_concept_is_never_overwritten_and_its_sighting_fails(consolidate, store, s3, bucket):
    from knowledge.store.keys import concept_key

    s3.put_object(Bucket=bucket, Key=concept_key(T, A, "frete-gratis"), Body=b"---\nname: [1, 2]\n---\nbody\n")
    answer = run(consolidate, sighting("sess_1"))
    assert answer == {"batchItemFailures": [{"itemIdentifier": "m0"}]}
    body = s3.get_object(Bucket=bucket, Key=concept_key(T, A, "frete-gratis"))["Body"].read()
    assert body == b"---\nname: [1, 2]\n---\nbody\n"


def test_each_version_links_to_where_its_sighting_was_quoted_never_the_quote(consolidate, store, s3, bucket):
    from knowledge.format.evidence import EvidenceLink
    from knowledge.format.sighting import EvidenceRef
    from knowledge.store.archive import TurnArchive
    from knowledge.store.keys import concept_key

    completed = datetime(2026, 11, 20, 14, 5, 31, 123456, tzinfo=timezone.utc)
    first = sighting("sess_1").model_copy(update={"evidence": EvidenceRef(completed_at=completed, message=2,
                                                                           start=10, end=58)})
    run(consolidate, first)
    run(consolidate, sighting("sess_2"))  # a sighting from an engine one release behind: no link
    [second, created] = store.versions(T, A, "frete-gratis")
    assert created.evidence == EvidenceLink("sess_1", "t1", completed, 2, 10, 58)
    assert second.evidence is None
    assert TurnArchive.key_for(T, A, created.evidence.completed_at, "sess_1", "t1") == (
        "default/store-support/turns/20261120T140531.123456Z/sess_1/t1.json")
    head = s3.head_object(Bucket=bucket, Key=concept_key(T, A, "frete-gratis"), VersionId=created.version_id)
    assert head["Metadata"]["evidence"] == "sess_1/t1/20261120T140531.123456Z/2/10-58"


@pytest.mark.parametrize("text", ["", "x", "a/b/20261120T140531.123456Z/2/58-10", "a b/t/20261120T140531.123456Z/1/0-1",
                                  "s/t/20261340T140531.123456Z/1/0-1", "s/t/20261120T140531.123456Z/1/0-1/extra/more"])
def test_a_link_that_is_not_one_reads_as_none(text):
    from knowledge.format.evidence import EvidenceLink

    assert EvidenceLink.decode(text) is None


def test_a_related_claim_never_rewrites_an_operators_body_it_waits_beside_it(consolidate, store, script):
    store.create(T, A, make_concept("frete-gratis", **FRETE), actor="operator:ana")
    script.replies.append(json.dumps({"verdict": "related", "description": "Rewritten by the model.",
                                      "body": "Rewritten by the model."}))
    assert run(consolidate, sighting("sess_2", description="The R$199 threshold applies after discounts.",
                                     body="The R$199 free-shipping threshold is checked after discounts.")) == {
        "batchItemFailures": []}
    stored = store.get(T, A, "frete-gratis")
    concept = stored.concept
    assert concept.description == FRETE["description"]
    assert concept.body.startswith(FRETE["body"] + "\n\n## Related claims\n")
    assert "checked after discounts" in concept.body and not concept.in_conflict
    assert (concept.occurrences, stored.reason, stored.actor) == (2, "kept_beside", "engine")


def test_a_sighting_that_says_the_record_in_another_order_confirms_with_no_model_call(consolidate, store, script,
                                                                                      model):
    """Issue 36, item 10, through ConsolidateFunction: the same claim with its clauses moved is confirmed
    without the judge; the same words with two roles swapped go to the judge."""
    record = dict(description="Trocas em até 30 dias com nota fiscal.",
                  body="A troca pode ser feita em até 30 dias com a nota fiscal e a etiqueta presa na peça.")
    run(consolidate, sighting("sess_1", name="troca-30-dias", **record))
    asked = len(model.requests)
    run(consolidate, sighting("sess_2", name="troca-30-dias",
                              description="Com nota fiscal, a troca pode ser feita em até 30 dias.",
                              body="Com a nota fiscal e a etiqueta presa na peça, a troca pode ser feita em até 30 dias."))
    stored = store.get(T, A, "troca-30-dias")
    assert stored.reason == "confirmed" and stored.concept.occurrences == 2 and len(model.requests) == asked
    script.replies.append('{"verdict": "contradicting"}')
    run(consolidate, sighting("sess_3", name="troca-30-dias", description="Trocas em até 30 dias sem nota fiscal.",
                              body="A troca pode ser feita em até 30 dias sem a nota fiscal e sem a etiqueta presa."))
    assert len(model.requests) == asked + 1 and store.get(T, A, "troca-30-dias").concept.in_conflict
