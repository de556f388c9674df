#!/usr/bin/env python3
"""Ranking quality on the labelled set (tests/data/retrieval_labelled.json), side by side
with plain term overlap (seed 000's scan): hit@5, MRR, and the share of off-topic messages
that inject anything.

    .venv/bin/python scripts/retrieval_report.py [--min-score X] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

from knowledge.concept import Concept
from knowledge.config import DEFAULT_MIN_SCORE
from knowledge.search import MIN_COVERAGE, Index, OverlapScan

LABELLED = Path(__file__).resolve().parents[1] / "tests" / "data" / "retrieval_labelled.json"
TOP_K = 5


def load(path: Path = LABELLED) -> tuple[list[Concept], list[dict], list[str]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    start = datetime(2026, 9, 1, tzinfo=timezone.utc)
    concepts = [Concept(name=c["name"], description=c["description"], type=c["type"], provenance="observed",
                        confidence=0.6, sources=("sess_1",), occurrences=1, created_at=start,
                        updated_at=start + timedelta(hours=i), body=c["body"])
                for i, c in enumerate(data["concepts"])]
    return concepts, data["queries"], data["off_topic"]


def evaluate(min_score: float = DEFAULT_MIN_SCORE, path: Path = LABELLED) -> dict:
    concepts, queries, off_topic = load(path)
    index = Index()
    for concept in concepts:
        index.upsert(concept.name, "etag", concept, concept.render().encode())
    index.settle()
    scan = OverlapScan(concepts)
    rankers = {
        "bm25": lambda message: [hit.name for hit in index.search(message, TOP_K, min_score, MIN_COVERAGE)],
        "overlap": lambda message: [name for name, _ in scan.search(message, TOP_K)],
    }
    report = {}
    for label, rank in rankers.items():
        hits, reciprocal, misses = 0, 0.0, []
        for query in queries:
            ranked = rank(query["message"])
            positions = [ranked.index(name) for name in query["expected"] if name in ranked]
            if positions:
                hits += 1
                reciprocal += 1 / (min(positions) + 1)
            else:
                misses.append({"message": query["message"], "expected": query["expected"], "got": ranked})
        injected = [message for message in off_topic if rank(message)]
        report[label] = {"hit_at_5": hits / len(queries), "mrr": reciprocal / len(queries),
                         "off_topic_injecting": len(injected) / len(off_topic), "misses": misses,
                         "off_topic_that_injected": injected}
    return {"concepts": len(concepts), "queries": len(queries), "off_topic": len(off_topic),
            "min_score": min_score, "rankers": report}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--min-score", type=float, default=DEFAULT_MIN_SCORE)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    report = evaluate(args.min_score)
    if args.json:
        print(json.dumps(report, indent=1, ensure_ascii=False))
        return 0
    print(f"{report['concepts']} concepts, {report['queries']} store questions, {report['off_topic']} off-topic "
          f"messages; top {TOP_K}; min_score {report['min_score']}\n")
    print(f"{'ranker':<10} {'hit@5':>7} {'MRR':>7} {'off-topic injecting':>20}")
    for label, row in report["rankers"].items():
        print(f"{label:<10} {row['hit_at_5']:>7.3f} {row['mrr']:>7.3f} {row['off_topic_injecting']:>20.3f}")
    for label, row in report["rankers"].items():
        for miss in row["misses"]:
            print(f"\n[{label}] missed: {miss['message']!r}\n  expected {miss['expected']}\n  got      {miss['got']}")
        for message in row["off_topic_that_injected"]:
            print(f"\n[{label}] off-topic injected: {message!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
