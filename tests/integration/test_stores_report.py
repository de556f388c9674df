"""scripts/reports/stores.py's evaluation, through the real RetrieveFunction handler, on two small
stores cut from the labelled ones, against counts made by hand."""

from __future__ import annotations

import json

import pytest
from helpers.paths import ROOT

from scripts.reports import stores as stores_report

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
    from knowledge.recall.overlap import OverlapScan

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


# ------------------------------------------------------------------ model words and traffic
MOTOBOY = "tem motoboy?"  # a word no concept of the cut says, that the stand-in proposes
BUFUNFA = "vcs aceitam bufunfa?"  # a word no concept says, that three sessions teach
PROPOSALS = {"drogaria": {"entrega-expressa-capital": [
    "motoboy",  # kept
    "entrega",  # refused: the concept says it
    "Motoboy",  # refused: the same word again
    "liga 11 98765-4321",  # refused: a phone is no word
]}}


@pytest.fixture(scope="module")
def learning(moto_endpoint) -> dict:
    drugstore = _subset("drogaria", 6)
    drugstore["traffic"] = [
        {"session": f"s-{i}", "about": ["formas-pagamento"], "customer": f"cus_{i}", "day": f"2026-10-0{4 - i}",
         "turns": [{"customer": "aceita bufunfa?", "assistant": "Aceitamos Pix, cartões e boleto."}]}
        for i in range(3)]
    drugstore["tests"] = [
        *[_test(f"d-{i}", c["description"], [c["name"]], "concept-words") for i, c in enumerate(drugstore["concepts"])],
        _test("motoboy", MOTOBOY, ["entrega-expressa-capital"], "taught"),
        _test("bufunfa", BUFUNFA, ["formas-pagamento"], "taught"),
        _test("o-1", CHIT_CHAT, [], "off-topic"),
    ]
    return stores_report.evaluate({"drogaria": drugstore}, endpoint=moto_endpoint, variants=("both",),
                                  proposals=PROPOSALS)


def _found(report: dict, phase: str, test_id: str) -> bool:
    taught = report["phases"][phase]["drogaria"]["index"]["taught"]
    return test_id not in {m["id"] for m in taught["misses"]}


def test_the_models_words_go_through_policy_review_and_its_gates(learning):
    # The six concepts' words in one job and one model call (as an import queues them, ten to a message);
    # the model answered from the proposals for the one concept they name (the other five are concepts
    # they lack: an empty array each); the gates kept one word.
    assert learning["model_words"]["drogaria"] == {
        "jobs": 1, "redelivered": 0, "calls": 1, "answered": 1, "unknown": 5, "proposed": 4, "kept": 1,
        "words": {"entrega-expressa-capital": ["motoboy"]}}


def test_a_words_job_the_function_fails_is_delivered_again_as_the_queue_would(moto_endpoint, monkeypatch):
    # The model's first answer is no JSON: on its first delivery the job fails (the queue would bring it
    # back), and the report delivers it again instead of ending; the second answer is kept.
    from scripts.lib import labelled_stores

    answering = labelled_stores.words_responder

    def unusable_first(proposals, asked):
        respond = answering(proposals, asked)

        def answer(request):
            if not asked["calls"]:
                asked["calls"] += 1
                return "the words, in a moment"
            return respond(request)
        return answer

    monkeypatch.setattr(labelled_stores, "words_responder", unusable_first)
    drugstore = {**_subset("drogaria", 6), "tests": [_test("motoboy", MOTOBOY, ["entrega-expressa-capital"], "taught")]}
    report = stores_report.evaluate({"drogaria": drugstore}, endpoint=moto_endpoint, proposals=PROPOSALS)
    words = report["model_words"]["drogaria"]
    assert (words["jobs"], words["redelivered"], words["calls"], words["kept"]) == (1, 1, 2, 1)
    assert report["phases"]["day one + model words"]["drogaria"]["index"]["taught"]["hit_at_5"] == 1.0


def test_day_one_and_after_traffic_are_measured_without_and_with_model_words(learning):
    assert list(learning["phases"]) == ["day one", "day one + model words", "after traffic (both)",
                                        "after traffic (both) + model words"]
    found = {phase: (_found(learning, phase, "motoboy"), _found(learning, phase, "bufunfa"))
             for phase in learning["phases"]}
    # The model's word is known from day one, and only where the agent asks for model words; the
    # traffic's word only after the traffic, with the model's words or without.
    assert found == {"day one": (False, False), "day one + model words": (True, False),
                     "after traffic (both)": (False, True), "after traffic (both) + model words": (True, True)}
    for phase in learning["phases"]:
        assert learning["phases"][phase]["drogaria"]["index"]["concept-words"]["hit_at_5"] == 1.0
        assert learning["phases"][phase]["drogaria"]["index"]["off-topic"]["off_topic_injecting"] == 0.0
    after = learning["learning"]["after traffic (both) + model words"]["drogaria"]
    assert after["turns"] == 3 and after["learned"] == {"formas-pagamento": ["bufunfa"]}  # the traffic's only


def test_the_summary_keeps_each_phases_overall_figures_and_the_report_prints_them(learning, capsys):
    cell = learning["summary"]["drogaria"]["day one + model words"]
    overall = learning["phases"]["day one + model words"]["drogaria"]["index"]["overall"]
    assert cell == {"hit_at_5": overall["hit_at_5"], "silent": overall["silent"], "off_topic": 0.0, "wordshare": None}
    assert cell["hit_at_5"] == 7 / 8
    stores_report.print_report(learning, misses=False, detail=False)
    out = capsys.readouterr().out
    assert "4: after traffic (both) + model words" in out
    assert "[model words] drogaria: 1 words jobs, 4 phrases answered, 1 kept on 1 concepts" in out
    [row] = [line for line in out.splitlines() if line.strip().startswith("drogaria") and "%" in line]
    assert row.split()[1:5] == ["0.750", "25.0%", "0.0%", "-"]  # day one: overall hit@5, silent, off-topic, wordshare


def test_the_traffic_runs_in_the_order_of_its_days_ending_three_days_before_the_run():
    from datetime import UTC, datetime, timedelta

    from scripts.lib import labelled_stores as stores_harness

    store = {"traffic": [{"session": "b", "day": "2026-10-05", "turns": [{}, {}]},
                         {"session": "a", "day": "2026-10-02", "turns": [{}]},
                         {"session": "c", "day": "2026-10-05", "turns": [{}]}]}
    now = datetime(2027, 3, 1, 12, 0, tzinfo=UTC)
    dated = [(s["session"], moment) for s, moment in stores_harness.dated_sessions(store, now)]
    assert [name for name, _ in dated] == ["a", "b", "c"]
    end = now - timedelta(days=3)
    assert dated[1][1] == end - timedelta(days=1) and dated[0][1] == end - timedelta(days=4)
    assert dated[2][1] == dated[1][1] + timedelta(seconds=2)  # after both turns of the session before it
