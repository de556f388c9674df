#!/usr/bin/env python3
"""Precision and recall of the PII redaction on the labelled set (tests/data/pii_labelled.jsonl).

    .venv/bin/python scripts/pii_report.py [--json]

A finding counts as correct when its kind and its exact text match a labelled one.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

from knowledge.pii import KINDS, find

LABELLED = Path(__file__).resolve().parents[1] / "tests" / "data" / "pii_labelled.jsonl"


def evaluate(path: Path = LABELLED) -> dict:
    tp, fp, fn = Counter(), Counter(), Counter()
    misses = []
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    for row in rows:
        expected = Counter((p["kind"], p["value"]) for p in row["pii"])
        found = Counter((f.kind, row["text"][f.start:f.end]) for f in find(row["text"]))
        for item in expected | found:
            hit = min(expected[item], found[item])
            tp[item[0]] += hit
            fp[item[0]] += found[item] - hit
            fn[item[0]] += expected[item] - hit
        if expected != found:
            misses.append({"text": row["text"], "expected": sorted(expected), "found": sorted(found)})

    def ratio(a: int, b: int) -> float:
        return a / b if b else 1.0

    table = {kind: {"tp": tp[kind], "fp": fp[kind], "fn": fn[kind],
                    "precision": ratio(tp[kind], tp[kind] + fp[kind]),
                    "recall": ratio(tp[kind], tp[kind] + fn[kind])} for kind in KINDS}
    total_tp, total_fp, total_fn = sum(tp.values()), sum(fp.values()), sum(fn.values())
    table["all"] = {"tp": total_tp, "fp": total_fp, "fn": total_fn,
                    "precision": ratio(total_tp, total_tp + total_fp), "recall": ratio(total_tp, total_tp + total_fn)}
    return {"rows": len(rows), "table": table, "misses": misses}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    report = evaluate()
    if args.json:
        print(json.dumps(report, indent=1, ensure_ascii=False))
        return 0
    print(f"PII redaction on {report['rows']} labelled texts\n")
    print(f"{'kind':<7} {'tp':>4} {'fp':>4} {'fn':>4} {'precision':>10} {'recall':>8}")
    for kind, row in report["table"].items():
        print(f"{kind:<7} {row['tp']:>4} {row['fp']:>4} {row['fn']:>4} {row['precision']:>10.3f} {row['recall']:>8.3f}")
    for miss in report["misses"]:
        print(f"\nmismatch: {miss['text']}\n  expected {miss['expected']}\n  found    {miss['found']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
