#!/usr/bin/env python3
"""Recall and near misses kept of the PII redaction, on the tuning set and on the held-out set.

    .venv/bin/python scripts/pii_report.py [--json]

Each labelled text lists its PII (`pii`: kind and exact text) and its near misses (`keep`: text that
looks like PII but is not, such as a CEP, a price or a store's address, with what it is). A PII item is
recalled when a finding has its kind and exactly its text; a near miss is kept when no finding touches
it. tests/data/pii_heldout.jsonl was written before the detectors were tuned and never tuned on.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

from shared.pii import KINDS, find

DATA = Path(__file__).resolve().parents[1] / "tests" / "data"
SETS = {"tuning": DATA / "pii_labelled.jsonl", "heldout": DATA / "pii_heldout.jsonl"}


def _ratio(a: int, b: int) -> float:
    return a / b if b else 1.0


def _spans(text: str, values: list[str]) -> list[tuple[int, int]]:
    """Where each value sits in `text`; a repeated value takes its next occurrence."""
    spans, after = [], Counter()
    for value in values:
        start = text.index(value, after[value])
        after[value] = start + 1
        spans.append((start, start + len(value)))
    return spans


def evaluate(path: Path) -> dict:
    tp, fp, fn = Counter(), Counter(), Counter()
    kept, near = Counter(), Counter()
    misses = []
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    for row in rows:
        text = row["text"]
        findings = find(text)
        expected = Counter((p["kind"], p["value"]) for p in row["pii"])
        found = Counter((f.kind, text[f.start:f.end]) for f in findings)
        for item in expected | found:
            hit = min(expected[item], found[item])
            tp[item[0]] += hit
            fp[item[0]] += found[item] - hit
            fn[item[0]] += expected[item] - hit
        eaten = []
        keeps = row.get("keep", [])
        for keep, (start, end) in zip(keeps, _spans(text, [k["value"] for k in keeps])):
            near[keep["kind"]] += 1
            if any(f.start < end and start < f.end for f in findings):
                eaten.append((keep["kind"], keep["value"]))
            else:
                kept[keep["kind"]] += 1
        if expected != found or eaten:
            misses.append({"text": text, "expected": sorted(expected), "found": sorted(found), "eaten": eaten})

    recall = {kind: {"tp": tp[kind], "fp": fp[kind], "fn": fn[kind],
                     "precision": _ratio(tp[kind], tp[kind] + fp[kind]),
                     "recall": _ratio(tp[kind], tp[kind] + fn[kind])} for kind in KINDS}
    all_tp, all_fp, all_fn = sum(tp.values()), sum(fp.values()), sum(fn.values())
    recall["all"] = {"tp": all_tp, "fp": all_fp, "fn": all_fn,
                     "precision": _ratio(all_tp, all_tp + all_fp), "recall": _ratio(all_tp, all_tp + all_fn)}
    near_misses = {kind: {"kept": kept[kind], "total": near[kind], "rate": _ratio(kept[kind], near[kind])}
                   for kind in sorted(near)}
    near_misses["all"] = {"kept": sum(kept.values()), "total": sum(near.values()),
                          "rate": _ratio(sum(kept.values()), sum(near.values()))}
    return {"rows": len(rows), "table": recall, "near_misses": near_misses, "misses": misses}


def _print(name: str, report: dict) -> None:
    print(f"== {name}: {report['rows']} labelled texts\n")
    print(f"{'kind':<9} {'tp':>4} {'fp':>4} {'fn':>4} {'precision':>10} {'recall':>8}")
    for kind, row in report["table"].items():
        print(f"{kind:<9} {row['tp']:>4} {row['fp']:>4} {row['fn']:>4} {row['precision']:>10.3f} {row['recall']:>8.3f}")
    print(f"\n{'near miss':<14} {'kept':>5} {'of':>4} {'rate':>6}")
    for kind, row in report["near_misses"].items():
        print(f"{kind:<14} {row['kept']:>5} {row['total']:>4} {row['rate']:>6.3f}")
    for miss in report["misses"]:
        print(f"\nmismatch: {miss['text']}\n  expected {miss['expected']}\n  found    {miss['found']}")
        if miss["eaten"]:
            print(f"  eaten    {miss['eaten']}")
    print()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    reports = {name: evaluate(path) for name, path in SETS.items()}
    if args.json:
        print(json.dumps(reports, indent=1, ensure_ascii=False))
        return 0
    for name, report in reports.items():
        _print(name, report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
