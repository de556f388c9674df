#!/usr/bin/env python3
"""A quick look at recall on the labelled stores' tuning part, in process: each store's concepts
indexed as RetrieveFunction indexes them (knowledge.recall.index.Index, the agent's default
`top_k` and `min_score`, no vocabulary), each test message answered by `Index.relevant`, as
retrieve answers it. Seconds instead of scripts/stores_report.py's minutes, so that the floor's
and the signals' weights can be chosen on the tuning part only; the figures that count are the
report's, through the real handlers.

    .venv/bin/python scripts/fit_recall.py [--learned REPORT.json] [--store NAME ...] [--misses PHASE]

The phases: day one; day one + model words (the stand-in's phrases, tests/data/stores/proposals/,
through the engine's own gate, knowledge.learning.proposal.gate_words); and, given a stores
report's `--json` output (`--learned`), after traffic, with and without the model words: the
words that run's traffic taught each concept (its `learning` section), as learned words.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import date
from pathlib import Path

from knowledge.format.learned import LearnedWord
from knowledge.learning.proposal import gate_words
from knowledge.recall.index import Index

sys.path.insert(0, str(Path(__file__).resolve().parent))
from stores_harness import TOP_K, concepts_of  # noqa: E402 - beside this script
from stores_report import ON_TOPIC, PROPOSALS, load_store, store_paths  # noqa: E402

MIN_SCORE = 1.0  # the agent's default (knowledge.format.config.DEFAULT_MIN_SCORE)
TODAY = date.today()


def indexed(concepts) -> Index:
    index = Index()
    for concept in concepts:
        index.upsert(concept.name, concept.name, concept, b"")
    index.settle()
    return index


def with_words(concepts, model: dict[str, list[str]] | None, traffic: dict[str, list[str]] | None):
    out = []
    for concept in concepts:
        if model and model.get(concept.name):
            kept, _ = gate_words(model[concept.name], concept)
            concept = concept.replace(learned_words=(*concept.learned_words,
                                                     *(LearnedWord(w, "model", 0, TODAY) for w in kept)))
        if traffic and traffic.get(concept.name):
            had = {e.word for e in concept.learned_words}
            concept = concept.replace(learned_words=(*concept.learned_words, *(
                LearnedWord(w, "loaded", 3, TODAY) for w in traffic[concept.name] if w not in had))[:24])
        out.append(concept)
    return out


def answer(index: Index, tests: list[dict], store: str) -> list[dict]:
    rows = []
    for test in tests:
        hits = index.relevant(test["message"], TOP_K, MIN_SCORE)
        rows.append({**test, "store": store, "ranked": [h.name for h in hits]})
    return rows


def figures(rows: list[dict]) -> dict:
    on = [r for r in rows if r["slice"] in ON_TOPIC]
    out = {"hit@5": sum(any(e in r["ranked"] for e in r["expected"]) for r in on) / max(1, len(on)),
           "silent": sum(not r["ranked"] for r in on) / max(1, len(on))}
    for slice_ in ("off-topic", "wordshare"):
        off = [r for r in rows if r["slice"] == slice_]
        out[slice_] = sum(bool(r["ranked"]) for r in off) / max(1, len(off))
    return out


def run(names: list[str], learned: dict | None) -> dict[str, list[dict]]:
    phases: dict[str, list[dict]] = {}
    for name in names:
        store = load_store(store_paths()[name])
        concepts = concepts_of(store)
        proposals = json.loads((PROPOSALS / f"{name}.json").read_text(encoding="utf-8"))
        plan = {"day one": (None, None), "day one + model words": (proposals, None)}
        if learned:
            plan["after traffic"] = (None, learned["after traffic (both)"][name]["learned"])
            plan["after traffic + model words"] = (proposals, learned["after traffic (both) + model words"][name]["learned"])
        for phase, (model, traffic) in plan.items():
            phases.setdefault(phase, []).extend(answer(indexed(with_words(concepts, model, traffic)),
                                                       store["tests"], name))
    return phases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--learned", type=Path, help="a stores report's --json output (its traffic's learned words)")
    parser.add_argument("--store", action="append")
    parser.add_argument("--misses", metavar="PHASE", help="print the misses and off-topic injections of a phase")
    args = parser.parse_args()
    learned = json.loads(args.learned.read_text())["learning"] if args.learned else None
    names = args.store or sorted(store_paths())
    phases = run(names, learned)
    print(f"{'phase':32} {'hit@5':>6} {'silent':>7} {'off':>6} {'wshare':>7}")
    for phase, rows in phases.items():
        f = figures(rows)
        print(f"{phase:32} {f['hit@5']:6.3f} {f['silent']:7.1%} {f['off-topic']:6.1%} {f['wordshare']:7.1%}")
    if args.misses:
        for r in phases[args.misses]:
            miss = r["slice"] in ON_TOPIC and not any(e in r["ranked"] for e in r["expected"])
            if miss or (r["slice"] not in ON_TOPIC and r["ranked"]):
                print(f"{r['store']:11} {r['slice']:12} {r['message'][:90]!r} -> {r['ranked'][:2]} want {r['expected']}")


if __name__ == "__main__":
    main()
