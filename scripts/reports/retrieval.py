#!/usr/bin/env python3
"""Ranking quality on the labelled messages, side by side with plain term overlap (seed 000's
scan) in the same run: hit@5, MRR, and the share of off-topic messages that inject anything,
per slice (short, long, English, off-topic) and overall, for five sets apart: the tuning set
(tests/data/retrieval_labelled.json); heldout-1, -2 and -3, seen (retrieval_heldout.json,
retrieval_heldout2.json, retrieval_heldout3.json: each written before a round of tuning, read
once after it, and its misses then informed the next round); and heldout-4, the held-out set
(retrieval_heldout4.json: written blind, by someone who saw neither the ranking code nor the
other sets' messages, before the fourth round of tuning, and read only after it). All sets use
the tuning file's concepts. The store's readings of its customers' words are its own data, the
demo agent's vocabulary (devstack/knowledge_dev/demo/vocabulary.yaml), loaded as retrieval loads
an agent's vocabulary.yaml; `--vocabulary FILE` reads another, `--vocabulary none` none.

    ./run script reports.retrieval [--set tuning|heldout-1|…|heldout-4] [--min-score X]
        [--vocabulary FILE|none] [--json]

The whole run takes seconds (it is its own smoke run) and ends with the store questions whose concept
the index ranked in the top 5, over the sets reported.
"""

from __future__ import annotations

import json
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Callable

from knowledge.format.concept import Concept
from knowledge.format.config import DEFAULT_MIN_SCORE
from knowledge.format.vocabulary import parse_vocabulary
from knowledge.recall.index import Index
from knowledge.recall.overlap import OverlapScan
from knowledge.recall.lexicon import lexicon_for
from scripts.lib.harness import ROOT, did_work, parser

DATA = ROOT / "tests" / "data"
LABELLED = DATA / "retrieval_labelled.json"
DEMO_VOCABULARY = ROOT / "devstack" / "knowledge_dev" / "demo" / "vocabulary.yaml"
SETS = {"tuning": DATA / "retrieval_labelled.json", "heldout-1, seen": DATA / "retrieval_heldout.json",
        "heldout-2, seen": DATA / "retrieval_heldout2.json", "heldout-3, seen": DATA / "retrieval_heldout3.json",
        "heldout-4": DATA / "retrieval_heldout4.json"}
TOP_K = 5
SLICES = ("short", "long", "english", "off_topic", "overall")


def concepts_of(path: Path = LABELLED) -> list[Concept]:
    data = json.loads(path.read_text(encoding="utf-8"))
    start = datetime(2026, 9, 1, tzinfo=timezone.utc)
    return [Concept(name=c["name"], description=c["description"], type=c["type"], provenance="observed",
                    confidence=0.6, sources=("sess_1",), occurrences=1, created_at=start,
                    updated_at=start + timedelta(hours=i), body=c["body"])
            for i, c in enumerate(data["concepts"])]


def messages_of(path: Path) -> tuple[list[dict], list[dict]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    return data["queries"], data["off_topic"]


def rankers(concepts: list[Concept], min_score: float,
            vocabulary: Path | None = DEMO_VOCABULARY) -> dict[str, Callable[[str], list[str]]]:
    """This index behind the floor retrieval applies (what select() injects before links), the
    message read through the `vocabulary` file's readings, and plain term overlap."""
    readings = lexicon_for(parse_vocabulary(vocabulary.read_bytes()).pairs(), None) if vocabulary else None
    index = Index()
    for concept in concepts:
        index.upsert(concept.name, "etag", concept, concept.render().encode())
    index.settle()
    scan = OverlapScan(concepts)
    return {
        "index": lambda message: [hit.name for hit in index.relevant(message, TOP_K, min_score, readings)],
        "overlap": lambda message: [name for name, _ in scan.search(message, TOP_K)],
    }


def _quality(rank: Callable[[str], list[str]], queries: list[dict]) -> dict:
    hits, reciprocal, misses = 0, 0.0, []
    for query in queries:
        ranked = rank(query["message"])
        positions = [ranked.index(name) for name in query["expected"] if name in ranked]
        if positions:
            hits += 1
            reciprocal += 1 / (min(positions) + 1)
        else:
            misses.append({"message": query["message"], "expected": query["expected"], "got": ranked})
    n = len(queries) or 1
    return {"n": len(queries), "hit_at_5": hits / n, "mrr": reciprocal / n, "misses": misses}


def _injection(rank: Callable[[str], list[str]], messages: list[dict]) -> dict:
    injected = [{"message": m["message"], "got": got} for m in messages if (got := rank(m["message"]))]
    return {"n_off_topic": len(messages), "off_topic_injecting": len(injected) / (len(messages) or 1), "injected": injected}


def evaluate_set(rank: Callable[[str], list[str]], queries: list[dict], off_topic: list[dict]) -> dict:
    english = [q for q in queries if q.get("lang") == "en"]
    english_off = [m for m in off_topic if m.get("lang") == "en"]
    return {
        "short": _quality(rank, [q for q in queries if q["slice"] == "short"]),
        "long": _quality(rank, [q for q in queries if q["slice"] == "long"]),
        "english": {**_quality(rank, english), **_injection(rank, english_off)},
        "off_topic": _injection(rank, off_topic),
        "overall": {**_quality(rank, queries), **_injection(rank, off_topic)},
    }


def evaluate(min_score: float = DEFAULT_MIN_SCORE, only: tuple[str, ...] = tuple(SETS),
             vocabulary: Path | None = DEMO_VOCABULARY) -> dict:
    concepts = concepts_of()
    ranked = rankers(concepts, min_score, vocabulary)
    sets = {}
    every: tuple[list[dict], list[dict]] = ([], [])
    for label, path in SETS.items():
        if label.split(",")[0] not in only and label not in only:
            continue
        queries, off_topic = messages_of(path)
        every[0].extend(queries)
        every[1].extend(off_topic)
        sets[label] = {"queries": len(queries), "off_topic": len(off_topic),
                       "rankers": {name: evaluate_set(rank, queries, off_topic) for name, rank in ranked.items()}}
    if len(sets) > 1:  # the whole labelled set: every message of the sets reported, once
        sets["all sets"] = {"queries": len(every[0]), "off_topic": len(every[1]),
                            "rankers": {name: evaluate_set(rank, *every) for name, rank in ranked.items()}}
    return {"concepts": len(concepts), "top_k": TOP_K, "min_score": min_score,
            "vocabulary": vocabulary.name if vocabulary else None, "sets": sets}


def _cell(row: dict, key: str) -> str:
    return f"{row[key]:.3f}" if key in row else "-"


def main() -> int:
    parser_ = parser(__doc__, smoke=None)
    parser_.add_argument("--min-score", type=float, default=DEFAULT_MIN_SCORE)
    parser_.add_argument("--set", action="append", choices=[label.split(",")[0] for label in SETS],
                        help="report only this set (repeatable); all five by default")
    parser_.add_argument("--vocabulary", default=str(DEMO_VOCABULARY),
                         help="the agent's vocabulary.yaml (default: the demo agent's); `none` for none")
    args = parser_.parse_args()
    vocabulary = None if args.vocabulary == "none" else Path(args.vocabulary)
    report = evaluate(args.min_score, tuple(args.set or [label.split(",")[0] for label in SETS]), vocabulary)
    if args.json:
        print(json.dumps(report, indent=1, ensure_ascii=False))
    else:
        print_report(report)
    apart = [result["rankers"]["index"]["overall"] for label, result in report["sets"].items() if label != "all sets"]
    did_work("store questions with their concept in the index's top 5",
             sum(round(r["hit_at_5"] * r["n"]) for r in apart), sum(r["n"] for r in apart), as_json=args.json)
    return 0


def print_report(report: dict) -> None:
    print(f"{report['concepts']} concepts; top {TOP_K}; min_score {report['min_score']}; "
          f"vocabulary {report['vocabulary'] or 'none'}")
    for label, result in report["sets"].items():
        print(f"\n{label}: {result['queries']} store questions, {result['off_topic']} off-topic messages")
        print(f"  {'slice':<10} {'ranker':<8} {'n':>4} {'hit@5':>7} {'MRR':>7} {'n':>5} {'off-topic injecting':>20}")
        for slice_ in SLICES:
            for name, rows in result["rankers"].items():
                row = rows[slice_]
                print(f"  {slice_:<10} {name:<8} {row.get('n', '-'):>4} {_cell(row, 'hit_at_5'):>7} "
                      f"{_cell(row, 'mrr'):>7} {row.get('n_off_topic', '-'):>5} {_cell(row, 'off_topic_injecting'):>20}")
        for name, rows in result["rankers"].items():
            if label == "all sets":
                break  # each miss was printed with its set
            for miss in rows["overall"]["misses"]:
                print(f"\n  [{label}/{name}] missed: {miss['message']!r}\n    expected {miss['expected']}\n"
                      f"    got      {miss['got']}")
            for item in rows["overall"]["injected"]:
                print(f"\n  [{label}/{name}] off-topic injected: {item['message']!r} -> {item['got']}")


if __name__ == "__main__":
    sys.exit(main())
