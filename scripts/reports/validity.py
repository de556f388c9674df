#!/usr/bin/env python3
"""The date reading (knowledge.learning.validity) on the labelled dated statements.

    ./run script reports.validity [--json]

tests/data/truth/dated_turns.jsonl: each statement with its completed_at and the valid_from /
valid_until it implies. The first TUNED rows are the ones the reading was tuned on; the rest are
held out and reported apart. Per kind of date (an end, a start, none stated): found (the same
date), missed (no date), wrong (another date) and invented (a date where none is stated). The whole
run takes a second (it is its own smoke run) and ends with the stated dates found.
"""

from __future__ import annotations

import json
import sys
from datetime import date, datetime

from knowledge.learning.validity import read_validity
from scripts.lib.harness import ROOT, Column, did_work, parser, print_table

SET = ROOT / "tests" / "data" / "truth" / "dated_turns.jsonl"
TUNED = 35  # the rows the reading was tuned on


def rows() -> list[dict]:
    return [json.loads(line) for line in SET.read_text(encoding="utf-8").splitlines() if line.strip()]


def local_day(completed_at: str) -> date:
    return datetime.fromisoformat(completed_at).date()  # the local date, in the offset it was written with


def score(part: list[dict]) -> dict[str, dict[str, int]]:
    table = {kind: {"statements": 0, "found": 0, "missed": 0, "wrong": 0, "invented": 0}
             for kind in ("end", "start", "none stated")}
    for row in part:
        read = read_validity(row["text"], local_day(row["completed_at"]))
        got = {"valid_until": read.valid_until, "valid_from": read.valid_from}
        if row["valid_from"] is None and row["valid_until"] is None:
            counts = table["none stated"]
            counts["statements"] += 1
            counts["invented"] += int(bool(read))
            continue
        for field, kind in (("valid_until", "end"), ("valid_from", "start")):
            expected = date.fromisoformat(row[field]) if row[field] else None
            counts = table[kind]
            if expected is None:
                counts["invented"] += int(got[field] is not None)
                continue
            counts["statements"] += 1
            if got[field] == expected:
                counts["found"] += 1
            elif got[field] is None:
                counts["missed"] += 1
            else:
                counts["wrong"] += 1
    return table


def misses(part: list[dict]) -> list[str]:
    out = []
    for row in part:
        read = read_validity(row["text"], local_day(row["completed_at"]))
        got = (read.valid_from.isoformat() if read.valid_from else None,
               read.valid_until.isoformat() if read.valid_until else None)
        if got != (row["valid_from"], row["valid_until"]):
            out.append(f"  {row['id']}: expected {row['valid_from']} .. {row['valid_until']}, read {got[0]} .. {got[1]}")
    return out


COLUMNS = [Column("kind", 12, lambda r: r["kind"], left=True)] + [
    Column(name, width, lambda r, name=name: str(r[name]))
    for name, width in (("statements", 10), ("found", 6), ("missed", 6), ("wrong", 6), ("invented", 8))]


def main() -> int:
    args = parser(__doc__, smoke=None).parse_args()
    every = rows()
    tuned, held = every[:TUNED], every[TUNED:]
    parts = {f"tuned on (rows 1-{TUNED})": score(tuned), f"held out (rows {TUNED + 1}-{len(every)})": score(held),
             "all": score(every)}
    wrong = misses(every)
    if args.json:
        print(json.dumps({"statements": len(every), "tuned": len(tuned), "parts": parts, "not_as_labelled": wrong},
                         indent=1, ensure_ascii=False))
    else:
        print(f"dated statements: {len(every)} ({len(tuned)} tuned on, {len(held)} held out)")
        for title, table in parts.items():
            print(f"\n{title}")
            print_table(COLUMNS, [{"kind": kind, **counts} for kind, counts in table.items()], indent="  ")
        if wrong:
            print("\nnot as labelled:")
            print("\n".join(wrong))
    stated = [counts for kind, counts in parts["all"].items() if kind != "none stated"]
    did_work("stated dates found", sum(c["found"] for c in stated), sum(c["statements"] for c in stated),
             as_json=args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
