"""Name convergence through the real extractor (the scripted model over HTTP, moto's S3, the fault
proxy): the list holds the agent's own concepts only, and an S3 that fails, refuses or leaves no time
is never a reason to fail a turn. The prompt itself: tests/unit/learning/test_convergence.py."""

from __future__ import annotations

import json
import time

import boto3
import pytest
from helpers.concepts import make_concept
from helpers.handlers import load_event

from knowledge.format.turn import parse_turn
from knowledge.learning.extract import Extractor
from knowledge.learning.known import MODEL_RESERVE_SECONDS, KnownConcepts
from knowledge.store.concepts import ConceptStore
from knowledge.store.config_cache import ConfigCache
from knowledge_dev.faults import SLOWDOWN, FaultProxy, Rule
from scripts.reports import convergence as report  # the report measures; these tests hold it to its targets
from shared import deadline
from shared.model import ModelCache

T, A = "default", "store-support"
CONFIG = "knowledge:\n  types: [fact, entity, procedure, policy, objection]\n"
TURN = parse_turn(load_event("turn-complete.json")["Records"][0]["body"])

# ------------------------------------------------------------------ through the real extractor

class Sent:
    def __init__(self):
        self.sightings = []

    def send(self, sightings):
        self.sightings.extend(sightings)


def seed(store, tenant, agent, *concepts):
    store.put_config(tenant, agent, CONFIG, actor="operator:ana")
    for concept in concepts:
        store.create(tenant, agent, concept, actor="engine")


def extractor_on(store, model, known_store=None, **known):
    models = ModelCache({"OPENAI_BASE_URL": model.base_url, "OPENAI_API_KEY": ""})
    finder = KnownConcepts(known_store or store, refresh_seconds=0, **known)
    return Extractor(ConfigCache(store), None, Sent(), models, "openai:test-model", counters=finder.counters,
                     known=finder)


def listed_in(request):
    return report.offered_names(request)


CAMPINAS = make_concept("cep-sudeste-cd-campinas", description="CEPs 13000-13999 saem do CD de Campinas.",
                        body="Pedidos para CEPs 13000-13999 saem do CD de Campinas em 1 a 2 dias úteis.")


SAME_DAY = make_concept("despacho-no-mesmo-dia", description="Pedidos pagos até as 14h saem no mesmo dia.",
                        body="Pedidos pagos até as 14h em dias úteis são despachados no mesmo dia.")


def test_the_list_never_holds_another_agents_or_another_tenants_concepts(store, model):
    seed(store, T, A, CAMPINAS)
    seed(store, T, "other-agent", make_concept("campinas-frete-outro-agente", description="Campinas frete 13083-970.",
                                               body="Campinas CD frete grátis despachados 14h."))
    seed(store, "acme", A, make_concept("campinas-frete-outro-tenant", description="Campinas frete 13083-970.",
                                        body="Campinas CD frete grátis despachados 14h."))
    extractor = extractor_on(store, model)
    extractor.process(TURN, archive=False)
    extractor.process(parse_turn(json.dumps({**json.loads(TURN.model_dump_json()), "tenant": "acme"})),
                      archive=False)
    assert [listed_in(request) for request in model.requests] == [["cep-sudeste-cd-campinas"],
                                                                  ["campinas-frete-outro-tenant"]]


@pytest.fixture
def proxy(moto_endpoint):
    with FaultProxy(moto_endpoint, seed=3) as running:
        yield running


def concepts_failing(proxy):
    """Every request for the agent's concepts (listings, reads, and the change journal's listing,
    which has its own top-level prefix) answered 503 SlowDown; knowledge.yaml still answers, so
    only the known list is at stake."""
    proxy.add_rule(Rule(SLOWDOWN, query=r"prefix=agents%2F[^&]*%2Fconcepts%2F"))
    proxy.add_rule(Rule(SLOWDOWN, query=r"prefix=journal%2F"))
    proxy.add_rule(Rule(SLOWDOWN, path="/concepts/"))


def through(proxy, bucket):
    from shared.aws import SERVICE_CONFIG

    return ConceptStore(boto3.client("s3", endpoint_url=proxy.url, region_name="us-east-1",
                                     config=SERVICE_CONFIG["s3"]), bucket)


def test_with_s3_failing_before_the_index_is_warm_the_turn_is_extracted_without_a_list(store, bucket, model,
                                                                                        proxy, script):
    seed(store, T, A, CAMPINAS, SAME_DAY)
    concepts_failing(proxy)
    script.default = json.dumps([{"name": "despacho-mesmo-dia", "description": "Pedidos até 14h saem no dia.",
                                  "type": "policy", "body": "Pedidos pagos até as 14h saem no mesmo dia.",
                                  "evidence": "pedidos pagos até as 14h em dias úteis são despachados no mesmo dia",
                                  }])
    extractor = extractor_on(through(proxy, bucket), model, fetch_budget_seconds=1.0)
    started = time.monotonic()
    outcome = extractor.process(TURN, archive=False)
    assert outcome.status == "processed" and [s.name for s in outcome.sightings] == ["despacho-mesmo-dia"]
    assert listed_in(model.requests[0]) == []
    assert extractor.counters.get("ServedStale", reason="store_unavailable") == 1
    assert time.monotonic() - started < 5


def test_with_s3_failing_after_warm_up_the_turn_is_shown_the_list_the_container_holds(store, bucket, model,
                                                                                      proxy):
    seed(store, T, A, CAMPINAS, SAME_DAY)
    extractor = extractor_on(through(proxy, bucket), model, fetch_budget_seconds=1.0)
    extractor.process(TURN, archive=False)
    concepts_failing(proxy)
    outcome = extractor.process(TURN, archive=False)
    assert outcome.status == "processed"
    assert sorted(listed_in(model.requests[1])) == sorted(listed_in(model.requests[0])) == [
        "cep-sudeste-cd-campinas", "despacho-no-mesmo-dia"]
    assert extractor.counters.get("ServedStale", reason="store_unavailable") == 1
    assert proxy.counters.faults[SLOWDOWN] >= 1


def test_a_turn_left_only_the_time_its_model_call_needs_asks_s3_nothing_for_the_list(store, bucket, model,
                                                                                     moto_endpoint):
    seed(store, T, A, CAMPINAS)
    s3 = boto3.client("s3", endpoint_url=moto_endpoint, region_name="us-east-1")
    listings = []
    s3.meta.events.register("before-send.s3.ListObjectsV2", lambda **kwargs: listings.append(1))
    extractor = extractor_on(ConceptStore(s3, bucket), model)
    with deadline.until(time.monotonic() + MODEL_RESERVE_SECONDS + 0.2):
        outcome = extractor.process(TURN, archive=False)
    assert outcome.status == "processed" and listings == [] and listed_in(model.requests[0]) == []
    assert extractor.counters.get("KnownConceptsNotRefreshed", reason="deadline") == 1
    extractor.process(TURN, archive=False)  # with time to spare, the list is back
    assert listings == [1] and listed_in(model.requests[1]) == ["cep-sudeste-cd-campinas"]


class RefusingStore:
    """The real store, except that S3 refuses to list concepts (403, as with a policy that
    lacks s3:ListBucket), translated by the real adapter code."""

    def __init__(self, store):
        self._store, self.listings = store, 0

    def list(self, tenant, agent):
        from botocore.exceptions import ClientError

        from shared.awscall import translate

        self.listings += 1
        raise translate(ClientError({"Error": {"Code": "AccessDenied"}, "ResponseMetadata": {"HTTPStatusCode": 403}},
                                    "ListObjectsV2"))

    def __getattr__(self, name):
        return getattr(self._store, name)


def test_a_refused_listing_never_fails_the_turn_and_is_not_asked_again_within_the_window(store, model):
    seed(store, T, A, CAMPINAS)
    refusing = RefusingStore(store)
    models = ModelCache({"OPENAI_BASE_URL": model.base_url, "OPENAI_API_KEY": ""})
    finder = KnownConcepts(refusing, refresh_seconds=60)
    extractor = Extractor(ConfigCache(store), None, Sent(), models, "openai:test-model", counters=finder.counters,
                          known=finder)
    assert extractor.process(TURN, archive=False).status == "processed"
    assert extractor.process(TURN, archive=False).status == "processed"
    assert refusing.listings == 1 and [listed_in(r) for r in model.requests] == [[], []]
    assert finder.counters.get("KnownConceptsNotRefreshed", reason="access_denied") == 1


def test_an_agent_that_recalls_shared_knowledge_is_shown_the_shared_concepts_names(store, model):
    from knowledge.store.keys import SHARED

    store.put_config(T, A, CONFIG + "  shared: true\n", actor="operator:ana")
    store.create(T, A, SAME_DAY, actor="engine")
    store.create(T, SHARED, CAMPINAS, actor="operator:ana")
    seed(store, T, "not-opted")
    extractor = extractor_on(store, model)
    extractor.process(TURN, archive=False)
    extractor.process(parse_turn(json.dumps({**json.loads(TURN.model_dump_json()), "agent": "not-opted"})),
                      archive=False)
    first, second = [listed_in(request) for request in model.requests]
    assert "cep-sudeste-cd-campinas" in first and "cep-sudeste-cd-campinas" not in (second or [])
