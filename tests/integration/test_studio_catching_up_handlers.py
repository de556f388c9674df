"""Through the real handlers: a studio list and the agents overview answered partial after bulk
writes say how many changes they have not read (and the next ones read on), and SnapshotFunction's
scheduled pass writes the snapshot so that a fresh studio container has nothing to catch up."""

from __future__ import annotations

import json
import uuid

from helpers.concepts import make_concept
from helpers.handlers import LambdaContext, load_handler
from helpers.studio import BASE, A, T, demo_studio, request

from knowledge.curation.studio import Studio


def bulk_writes(store, n=6):
    for i in range(n):
        store.create(T, A, make_concept(f"frete-regiao-{i}", description=f"Frete zyxqua {i}."), actor="engine")


def snapshot_function(monkeypatch, bucket):
    return load_handler("snapshot", monkeypatch, dict(KNOWLEDGE_BUCKET=bucket),
                        POWERTOOLS_SERVICE_NAME=f"snapshot-{uuid.uuid4().hex[:6]}")


def test_a_list_and_the_overview_answered_partial_say_so_and_the_next_ones_catch_up(monkeypatch, store, bucket,
                                                                                     sessions_bucket):
    # A container whose budget is spent after one chunk of two concepts.
    monkeypatch.setitem(Studio.__init__.__kwdefaults__, "catch_up_seconds", 0.0)
    monkeypatch.setitem(Studio.__init__.__kwdefaults__, "fetch_chunk", 2)
    api = demo_studio(monkeypatch, store, bucket, sessions_bucket)
    assert snapshot_function(monkeypatch, bucket).lambda_handler({}, LambdaContext())["ok"]
    bulk_writes(store)
    status, body, _ = api("GET", f"{BASE}/concepts", query={"limit": "50"})
    assert status == 200 and body["catching_up"] == 4 and body["total"] == 9
    status, body, _ = api("GET", f"/tenants/{T}/agents")
    assert status == 200 and [(a["name"], a["concepts"], a["catching_up"]) for a in body["agents"]] == [(A, 11, 2)]
    _, body, _ = api("GET", f"{BASE}/concepts", query={"q": "zyxqua"})
    assert body["catching_up"] == 0 and body["total"] == 6


def test_the_scheduled_pass_leaves_a_fresh_studio_nothing_to_catch_up(monkeypatch, store, bucket, sessions_bucket):
    api = demo_studio(monkeypatch, store, bucket, sessions_bucket)
    bulk_writes(store, 20)
    answer = snapshot_function(monkeypatch, bucket).lambda_handler({}, LambdaContext())
    assert answer == {"ok": True, "agents": 1, "current": 1, "behind": 0, "changes_left": 0, "failed": 0,
                      "complete": True}
    monkeypatch.setitem(Studio.__init__.__kwdefaults__, "catch_up_seconds", 0.0)
    monkeypatch.setitem(Studio.__init__.__kwdefaults__, "fetch_chunk", 2)
    handler = load_handler("studio_api", monkeypatch, dict(
        KNOWLEDGE_BUCKET=bucket, SESSIONS_BUCKET=sessions_bucket, STUDIO_ORIGIN="http://127.0.0.1:8080"),
        POWERTOOLS_SERVICE_NAME="studio-cold")
    body = json.loads(handler.lambda_handler(request("GET", f"{BASE}/concepts"), LambdaContext())["body"])
    assert body["catching_up"] == 0 and body["total"] == 27
    assert api("GET", f"{BASE}/concepts")[1]["total"] == 27


def test_a_snapshot_event_that_breaks_the_contract_is_answered_with_a_clear_error(monkeypatch, bucket):
    answer = snapshot_function(monkeypatch, bucket).lambda_handler({"tenant": "Loja B"}, LambdaContext())
    assert answer["ok"] is False and answer["error"]["code"] == "invalid_request"
    assert "tenant" in answer["error"]["message"] and "Loja B" not in answer["error"]["message"]


def test_the_overview_counts_what_is_new_to_the_operator_within_its_one_budget(monkeypatch, store, bucket,
                                                                               sessions_bucket):
    # The per-operator "new" comes from the rows the overview read, not from a second read of
    # each agent: two overviews after bulk writes read one chunk each, and say so.
    monkeypatch.setitem(Studio.__init__.__kwdefaults__, "catch_up_seconds", 0.0)
    monkeypatch.setitem(Studio.__init__.__kwdefaults__, "fetch_chunk", 2)
    api = demo_studio(monkeypatch, store, bucket, sessions_bucket)
    assert snapshot_function(monkeypatch, bucket).lambda_handler({}, LambdaContext())["ok"]
    bulk_writes(store, 6)
    counts = []
    for _ in range(3):
        status, body, _ = api("GET", f"/tenants/{T}/agents")
        assert status == 200
        ((name, left, new),) = [(a["name"], a["catching_up"], a["new"]) for a in body["agents"]]
        counts.append((left, new))
    assert name == A and [left for left, _ in counts] == [4, 2, 0]
    # What the engine just wrote is new to the operator once read, and not before.
    assert counts[-1][1] >= 6 and counts[0][1] < counts[-1][1]


def test_the_scheduled_pass_brings_the_tenants_shared_snapshot_up_to_date_too(monkeypatch, store, bucket,
                                                                             sessions_bucket):
    from knowledge.store.keys import SHARED

    demo_studio(monkeypatch, store, bucket, sessions_bucket)
    snapshot_function(monkeypatch, bucket).lambda_handler({}, LambdaContext())
    assert store.get_snapshot(T, SHARED) is None  # the tenant keeps nothing shared: nothing to look at
    store.create(T, SHARED, make_concept("troca-30-dias", description="Troca em até 30 dias em todas as lojas."),
                 actor="operator:ana")
    answer = snapshot_function(monkeypatch, bucket).lambda_handler({}, LambdaContext())
    assert (answer["agents"], answer["current"], answer["failed"]) == (2, 2, 0)
    shared = store.get_snapshot(T, SHARED)
    assert shared is not None
    store.create(T, SHARED, make_concept("frete-gratis-200", description="Frete grátis acima de R$ 200."),
                 actor="operator:ana")
    snapshot_function(monkeypatch, bucket).lambda_handler({}, LambdaContext())
    assert store.get_snapshot(T, SHARED).etag != shared.etag  # rewritten once something changed


def test_once_the_last_shared_concept_is_deleted_the_pass_writes_its_snapshot_over(monkeypatch, store, bucket,
                                                                                  sessions_bucket):
    from knowledge.recall.snapshot import decode
    from knowledge.store.keys import SHARED

    demo_studio(monkeypatch, store, bucket, sessions_bucket)
    store.create(T, SHARED, make_concept("troca-30-dias", description="Troca em até 30 dias em todas as lojas."),
                 actor="operator:ana")
    snapshot_function(monkeypatch, bucket).lambda_handler({}, LambdaContext())
    assert set(decode(store.get_snapshot(T, SHARED).data, T, SHARED).summaries) == {"troca-30-dias"}
    store.delete(T, SHARED, "troca-30-dias", actor="operator:ana")
    answer = snapshot_function(monkeypatch, bucket).lambda_handler({}, LambdaContext())
    assert (answer["agents"], answer["failed"]) == (2, 0)
    # A cold reader no longer starts from the deleted concept.
    assert decode(store.get_snapshot(T, SHARED).data, T, SHARED).summaries == {}


def test_a_tenant_whose_listing_fails_is_counted_and_the_pass_goes_on_to_the_next(monkeypatch, store, bucket,
                                                                                  sessions_bucket):
    from knowledge.store.concepts import ConceptStore
    from shared.errors import StoreUnavailable

    demo_studio(monkeypatch, store, bucket, sessions_bucket)
    store.create("loja-b", "outra", make_concept("horario", description="Abre às 9h."), actor="engine")
    real = ConceptStore.has_shared

    def throttled(self, tenant):
        if tenant == T:
            raise StoreUnavailable("SlowDown")
        return real(self, tenant)

    monkeypatch.setattr(ConceptStore, "has_shared", throttled)
    answer = snapshot_function(monkeypatch, bucket).lambda_handler({}, LambdaContext())
    assert (answer["agents"], answer["current"], answer["failed"], answer["complete"]) == (1, 1, 1, False)
    assert store.get_snapshot("loja-b", "outra") is not None
