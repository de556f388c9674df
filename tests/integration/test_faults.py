"""The product through the fault proxy: S3 as it is on a bad day (throttling, 5xx, 409 on
conditional writes, connections dropped before and after S3 applied the request)."""

from __future__ import annotations

import boto3
import pytest
from helpers.concepts import make_concept
from helpers.paths import DEMO

from knowledge.format.concept import parse
from knowledge_dev.faults import CONDITIONAL, RESET_AFTER, FaultMix, FaultProxy, Rule
from shared.errors import StoreUnavailable

T, A = "default", "store-support"


@pytest.fixture
def proxy(moto_endpoint):
    with FaultProxy(moto_endpoint, seed=11) as running:
        yield running


def s3_through(proxy):
    from shared.aws import SERVICE_CONFIG

    return boto3.client("s3", endpoint_url=proxy.url, region_name="us-east-1", config=SERVICE_CONFIG["s3"])


class NoEvents:
    def publish(self, detail_type, detail):
        pass


@pytest.fixture
def warm_retriever(proxy, store, bucket):
    from knowledge.recall.retrieve import Retriever
    from knowledge.store.concepts import ConceptStore

    store.put_config(T, A, (DEMO / "knowledge.yaml").read_text(), actor="operator:demo")
    for path in sorted(DEMO.glob("*.md")):
        store.create(T, A, parse(path.read_text()), actor="engine")
    retriever = Retriever(ConceptStore(s3_through(proxy), bucket), NoEvents(), refresh_seconds=0)
    warm = retriever.handle({"agent": A, "session_id": "s1", "message": "Moro em Campinas, o frete é grátis?"})
    assert warm["concepts"]
    return retriever, warm


def test_with_s3_down_retrieval_answers_from_the_warm_index_and_counts_it(proxy, warm_retriever):
    retriever, warm = warm_retriever
    proxy.mix = FaultMix(slowdown=0.5, internal=0.3, reset=0.2)
    answer = retriever.handle({"agent": A, "session_id": "s1", "message": "Moro em Campinas, o frete é grátis?"},
                              remaining_seconds=4)
    assert answer["block"] == warm["block"]
    loaded = retriever.handle({"action": "load_knowledge", "agent": A, "session_id": "s1",
                               "name": "cep-sudeste-cd-campinas"}, remaining_seconds=4)
    assert loaded["name"] == "cep-sudeste-cd-campinas"
    assert retriever.counters.get("ServedStale", reason="store_unavailable") >= 1


def test_with_s3_down_a_cold_agent_is_a_clear_error_within_the_time_lambda_gives(proxy, store, bucket):
    import time

    from knowledge.recall.retrieve import Retriever
    from knowledge.store.concepts import ConceptStore

    store.put_config(T, A, (DEMO / "knowledge.yaml").read_text(), actor="operator:demo")
    proxy.mix = FaultMix(slowdown=1.0)
    retriever = Retriever(ConceptStore(s3_through(proxy), bucket), NoEvents())
    started = time.monotonic()
    with pytest.raises(StoreUnavailable):
        retriever.handle({"agent": A, "session_id": "s1", "message": "frete"}, remaining_seconds=3)
    assert time.monotonic() - started < 3


def test_a_create_whose_answer_is_lost_after_s3_applied_it_is_not_a_conflict(proxy, bucket):
    from knowledge.store.concepts import ConceptStore

    proxy.add_rule(Rule(RESET_AFTER, method="PUT", path="/concepts/", header=CONDITIONAL, nth=1))
    store = ConceptStore(s3_through(proxy), bucket)
    written = store.create(T, A, make_concept("frete-gratis"), actor="operator:ana")
    assert written.concept == make_concept("frete-gratis")
    assert proxy.counters.faults[RESET_AFTER] == 1


def test_a_409_on_the_turn_archive_is_retried_so_backfill_still_finds_the_turn(proxy, sessions_bucket, s3):
    from helpers.handlers import load_event

    from knowledge.format.turn import parse_turn
    from knowledge.store.archive import TurnArchive

    turn = parse_turn(load_event("turn-complete.json")["Records"][0]["body"])
    proxy.add_rule(Rule("conflict", method="PUT", path="/turns/", nth=1))
    archive = TurnArchive(s3_through(proxy), sessions_bucket)
    assert archive.put(turn) is True
    assert [o["Key"] for o in s3.list_objects_v2(Bucket=sessions_bucket)["Contents"]] == [archive.key(turn)]
    assert archive.put(turn) is False  # a redelivery: there already


def test_fifty_sightings_and_their_redelivery_count_exactly_under_the_issues_fault_mix(moto_endpoint):
    from knowledge_dev import fault_run

    result = fault_run.run(3, 20, moto_endpoint=moto_endpoint)
    assert (result.occurrences, result.sources, result.dead_lettered, result.escaped) == (20, 20, 0, 0)
    assert sum(result.faults.values()) > 10  # the day was bad


def test_a_brownout_that_fails_whole_deliveries_still_counts_exactly_and_dead_letters_nothing(moto_endpoint):
    from knowledge_dev import fault_run

    mix = FaultMix(slowdown=0.25, internal=0.10, reset=0.10, conflict_on_conditional=0.10)
    result = fault_run.run(5, 8, moto_endpoint=moto_endpoint, mix=mix, timeout_seconds=3.5)
    assert (result.occurrences, result.sources, result.dead_lettered, result.escaped) == (8, 8, 0, 0)
    assert result.max_receives > 1  # records really failed whole deliveries and came back
