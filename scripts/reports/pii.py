#!/usr/bin/env python3
"""Recall and near misses kept of the PII redaction, on the tuning set and on the held-out set; and, on the
names sets, recall of bare person names and the false-positive rate on places, brands and products.

    ./run script reports.pii [--json] [--misses] [--timing]

Each labelled text lists its PII (`pii`: kind and exact text) and its near misses (`keep`: text that
looks like PII but is not, such as a CEP, a price or a store's address, with what it is). A PII item is
recalled when a finding has its kind and exactly its text; a near miss is kept when no finding touches
it. tests/data/pii_heldout.jsonl was written before the detectors were tuned and never tuned on.

The names sets (tests/data/pii_names_tune.jsonl, pii_names_heldout.jsonl: realistic support messages of
several kinds of store, written by someone who had not read the detectors) list each text's `people`
(a person's name, as written) and `not_people` (places, brands, products, pets... that look like names).
A person is recalled when findings cover every occurrence of the name whole; a confounder is a false
positive when a name finding touches one of its occurrences (a street in a customer's address is
redacted as an address, rightly, and is not counted). The detectors were tuned on the tune set only.
The whole run takes a second (it is its own smoke run) and ends with the PII items recalled.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

from scripts.lib.harness import ROOT, did_work, parser
from shared.pii import KINDS, find, redact

DATA = ROOT / "tests" / "data"
SETS = {"tuning": DATA / "pii_labelled.jsonl", "heldout": DATA / "pii_heldout.jsonl"}
NAME_SETS = {"names tune": DATA / "pii_names_tune.jsonl", "names heldout": DATA / "pii_names_heldout.jsonl"}


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


def _occurrences(text: str, value: str) -> list[tuple[int, int]]:
    out, at = [], text.find(value)
    while at >= 0:
        out.append((at, at + len(value)))
        at = text.find(value, at + 1)
    return out


def _covered(findings, start: int, end: int) -> bool:
    """Every character of [start, end) that is not a space is inside some finding."""
    return all(text_char_in(findings, i) for i in range(start, end))


def text_char_in(findings, index: int) -> bool:
    return any(f.start <= index < f.end for f in findings)


def evaluate_names(path: Path) -> dict:
    people = recalled = confounders = eaten = 0
    eaten_texts = 0
    misses = []
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    for row in rows:
        text = row["text"]
        findings = find(text)
        missed, wrong = [], []
        for name in row["people"]:
            people += 1
            spans = _occurrences(text, name)
            if all(_covered(findings, start, end) for start, end in spans):
                recalled += 1
            else:
                missed.append(name)
        for other in row["not_people"]:
            confounders += 1
            if any(f.kind == "name" and f.start < end and start < f.end
                   for start, end in _occurrences(text, other) for f in findings):
                eaten += 1
                wrong.append(other)
        eaten_texts += bool(wrong)
        if missed or wrong:
            misses.append({"id": row["id"], "text": text, "missed": missed, "eaten": wrong,
                           "found": [(f.kind, text[f.start:f.end]) for f in findings]})
    return {"rows": len(rows), "people": people, "recalled": recalled, "recall": _ratio(recalled, people),
            "confounders": confounders, "eaten": eaten,
            "false_positive_rate": eaten / confounders if confounders else 0.0,
            "texts_with_a_false_positive": eaten_texts, "misses": misses}


def _print_names(name: str, report: dict, misses: bool) -> None:
    print(f"== {name}: {report['rows']} texts")
    print(f"people recalled   {report['recalled']:>4} of {report['people']:>4}  recall {report['recall']:.3f}")
    print(f"confounders eaten {report['eaten']:>4} of {report['confounders']:>4}  false-positive rate "
          f"{report['false_positive_rate']:.3f} ({report['texts_with_a_false_positive']} texts)")
    if misses:
        for miss in report["misses"]:
            print(f"\n{miss['id']}: {miss['text']}\n  missed {miss['missed']}  eaten {miss['eaten']}\n"
                  f"  found  {miss['found']}")
    print()


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


# Adversarial fills (the unit test checks they stay linear; this prints what they cost).
TIMED_UNITS = ("Rua ", "Sr. José ", "cliente Ana ", "11 9 8765 4321 ", "Aa ",
               "Rua das Flores, 123, apto 4, Sr. José Silva, RG 12.345.678-9, (11) 98765 4321, loja. ")


def timing(rounds: int = 20) -> None:
    """p50/p95 of one redaction of a 3 KB and a 30 KB fill of each unit, and their ratio (about 10
    when the detectors are linear)."""
    import time

    def times(text: str) -> list[float]:
        out = []
        for _ in range(rounds):
            start = time.perf_counter()
            redact(text)
            out.append((time.perf_counter() - start) * 1000)
        return sorted(out)

    print(f"redaction time, {rounds} rounds (ms)")
    print(f"  {'unit':<28} {'3 KB p50':>9} {'30 KB p50':>10} {'30 KB p95':>10} {'ratio':>6}")
    for unit in TIMED_UNITS:
        small = times((unit * (3_000 // len(unit) + 1))[:3_000])
        big = times((unit * (30_000 // len(unit) + 1))[:30_000])
        p50s, p50b, p95b = small[len(small) // 2], big[len(big) // 2], big[int(len(big) * 0.95) - 1]
        print(f"  {unit[:26]!r:<28} {p50s:>9.2f} {p50b:>10.2f} {p95b:>10.2f} {p50b / p50s:>6.1f}")


def main() -> int:
    parser_ = parser(__doc__, smoke=None)
    parser_.add_argument("--misses", action="store_true", help="print each names-set text with a miss")
    parser_.add_argument("--timing", action="store_true", help="print what redacting long adversarial texts costs")
    args = parser_.parse_args()
    if args.timing:
        timing()
        return 0
    reports = {name: evaluate(path) for name, path in SETS.items()}
    names = {name: evaluate_names(path) for name, path in NAME_SETS.items()}
    if args.json:
        print(json.dumps({**reports, "names": names}, indent=1, ensure_ascii=False))
    else:
        for name, report in reports.items():
            _print(name, report)
        for name, report in names.items():
            _print_names(name, report, args.misses)
    rows = [row for report in reports.values() for row in report["table"].values()]
    did_work("labelled PII items recalled", sum(r["tp"] for r in rows), sum(r["tp"] + r["fn"] for r in rows),
             as_json=args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
