"""scripts/stores_report.py's evaluation, through the real RetrieveFunction handler, on two small
stores cut from the labelled ones, against counts made by hand."""

from __future__ import annotations

import json
import sys

import pytest
from helpers.paths import ROOT


def _script():
    sys.path.insert(0, str(ROOT / "scripts"))  # beside the other scripts, not a package
    import stores_report

    return stores_report


stores_report = _script()

CHIT_CHAT = "oi, tudo bem? obrigada, boa noite!"


def _subset(name: str, count: int) -> dict:
    data = json.loads((ROOT / "tests" / "data" / "stores" / f"{name}.json").read_text(encoding="utf-8"))
    return {**data, "concepts": data["concepts"][:count], "tests": []}


def _test(id_: str, message: str, expected: list[str], slice_: str, language: str = "pt") -> dict:
    return {"id": id_, "message": message, "expected": expected, "slice": slice_, "language": language}


@pytest.fixture(scope="module")
def stores() -> dict:
    drugstore, pets = _subset("drogaria", 6), _subset("petshop", 5)
    first, second = drugstore["concepts"][0], drugstore["concepts"][1]
    drugstore["tests"] = [
        *[_test(f"d-{i}", c["description"], [c["name"]], "concept-words") for i, c in enumerate(drugstore["concepts"])],
        _test("t-1", CHIT_CHAT, [first["name"]], "taught"),  # on-topic by its label, and silent
        _test("n-1", first["description"], ["nao-existe"], "never-taught", "en"),  # injects, and misses
        _test("o-1", CHIT_CHAT, [], "off-topic"),
        _test("w-1", second["description"], [], "wordshare", "en"),  # injects: counted as off-topic injecting
    ]
    # The drugstore's own descriptions asked of the pet shop: its agent has none of those concepts.
    pets["tests"] = [_test(f"p-{i}", c["description"], [c["name"]], "concept-words")
                     for i, c in enumerate(drugstore["concepts"][:3])]
    return {"drogaria": drugstore, "petshop": pets}


@pytest.fixture(scope="module")
def day_one(stores, moto_endpoint) -> dict:
    return stores_report.evaluate(stores, endpoint=moto_endpoint)["phases"]["day one"]


def test_a_concepts_own_description_finds_it_and_chit_chat_injects_nothing(day_one):
    drugstore = day_one["drogaria"]["index"]
    assert drugstore["concept-words"]["n"] == 6 and drugstore["concept-words"]["hit_at_5"] == 1.0
    assert drugstore["concept-words"]["silent"] == 0.0
    assert drugstore["off-topic"] == {"n_off_topic": 1, "off_topic_injecting": 0.0, "injected": []}
    # Labelled on-topic, chit-chat is a silent miss; a message that injects but ranks no expected name is
    # a miss that is not silent.
    assert drugstore["taught"]["hit_at_5"] == 0.0 and drugstore["taught"]["silent"] == 1.0
    assert drugstore["never-taught"]["hit_at_5"] == 0.0 and drugstore["never-taught"]["silent"] == 0.0
    [miss] = drugstore["never-taught"]["misses"]
    assert miss["expected"] == ["nao-existe"] and miss["got"][0] == "entrega-expressa-capital"
    assert drugstore["wordshare"]["off_topic_injecting"] == 1.0


def test_the_slices_add_up_to_overall_and_the_stores_to_all_stores(day_one):
    drugstore = day_one["drogaria"]["index"]
    overall = drugstore["overall"]
    assert overall["n"] == 8 and overall["hit_at_5"] == 6 / 8 and overall["silent"] == 1 / 8
    assert overall["n_off_topic"] == 2 and overall["off_topic_injecting"] == 1 / 2
    assert drugstore["english"]["n"] == 1 and drugstore["english"]["n_off_topic"] == 1
    # Each store is its own tenant: the pet shop's agent has none of the drugstore's concepts.
    assert day_one["petshop"]["index"]["overall"]["hit_at_5"] == 0.0
    pooled = day_one["all stores"]["index"]["overall"]
    assert pooled["n"] == 8 + 3 and pooled["hit_at_5"] == 6 / 11


def test_plain_overlap_is_counted_on_the_same_messages(day_one, stores):
    from knowledge.recall.index import OverlapScan

    scan = OverlapScan(stores_report.concepts_of(stores["drogaria"]))
    on_topic = [t for t in stores["drogaria"]["tests"] if t["slice"] in stores_report.ON_TOPIC]
    hits = sum(any(name in [n for n, _ in scan.search(t["message"], 5)] for name in t["expected"]) for t in on_topic)
    assert day_one["drogaria"]["overlap"]["overall"]["hit_at_5"] == hits / len(on_topic)


def test_policy_concepts_are_written_as_policy_and_the_rest_as_observed():
    concepts = stores_report.concepts_of(stores_report.load_store(stores_report.store_paths()["drogaria"]))
    assert {c.provenance for c in concepts if c.type == "policy"} == {"policy"}
    assert {c.provenance for c in concepts if c.type != "policy"} == {"observed"}


def test_the_handlers_numbers_are_those_of_its_index_counted_directly(day_one, stores):
    from knowledge.format.config import DEFAULT_MIN_SCORE
    from knowledge.recall.index import Index

    index = Index()
    for concept in stores_report.concepts_of(stores["drogaria"]):
        index.upsert(concept.name, "etag", concept, concept.render().encode())
    index.settle()
    ranks, silent = [], 0
    for test in (t for t in stores["drogaria"]["tests"] if t["slice"] in stores_report.ON_TOPIC):
        ranked = [hit.name for hit in index.relevant(test["message"], 5, DEFAULT_MIN_SCORE)]
        silent += not ranked
        ranks.append(min((ranked.index(n) + 1 for n in test["expected"] if n in ranked), default=None))
    overall = day_one["drogaria"]["index"]["overall"]
    assert overall["mrr"] == pytest.approx(sum(1 / r for r in ranks if r) / len(ranks))
    assert overall["silent_n"] == silent


def test_the_traffic_replay_dates_each_session_and_passes_its_customer_only_in_the_customers_variant(
        moto_endpoint):
    gym = json.loads((ROOT / "tests" / "data" / "stores" / "academia.json").read_text(encoding="utf-8"))
    pause = next(c for c in gym["concepts"] if c["name"] == "trancamento-plano")
    # One customer's four chats on four days, each loading the concept for a word it never says.
    traffic = [{"session": f"s-{n}", "about": [pause["name"]], "customer": "cus_1", "day": f"2026-10-0{n}",
                "turns": [{"customer": "da pra congelar o plano?", "assistant": "Dá sim, por até 60 dias."}]}
               for n in range(1, 5)]
    store = {**gym, "concepts": [pause, gym["concepts"][0]], "traffic": traffic, "tests": []}
    assert stores_report.session_start(store, 2).isoformat() == "2026-10-03T12:00:00+00:00"
    undated = {**store, "traffic": [{k: v for k, v in s.items() if k != "day"} for s in traffic]}
    assert (stores_report.session_start(undated, 1) - stores_report.session_start(undated, 0)).days == 1

    learning = stores_report.evaluate({"academia": store}, endpoint=moto_endpoint,
                                      variants=("both", "customers"))["learning"]
    # Without customer ids, four sessions on four days teach it; with them, one customer teaches nothing.
    assert "congelar" in learning["both"]["academia"]["learned"].get(pause["name"], [])
    assert learning["customers"]["academia"]["learned"] == {}
    assert learning["customers"]["academia"]["sessions_with_customer"] == 4
