#!/usr/bin/env python3
"""Write the word-frequency tables recall reads (knowledge/recall/data/frequency-<lang>.txt) from
the `wordfreq` package's small lists (its data: CC BY-SA 4.0, docs/third-party.md).

    python -m venv /tmp/wf && /tmp/wf/bin/pip install wordfreq
    PYTHONPATH=layers/core /tmp/wf/bin/python -m scripts.gen.word_frequency [--lang pt --lang en]
    ./run script gen.word_frequency --check   # no wordfreq needed: the shipped tables against the code

The layer ships one table per language recall serves, never the package (56 MB, every language).
Each line is `<zipf × 10> <form> <form> …`: the words of one frequency step, written as the index
reads a word (knowledge.recall.terms.term_and_form's singular form: folded, singular), their
frequencies summed over the spellings that meet in one form (ônibus, onibus). Only forms at
ZIPF_MIN or more (about one in a million words) are kept: a rarer word is rare for recall too.

`--check` (the smoke run) rebuilds nothing: it reads each shipped table and checks that its steps
descend and that every form is what term_and_form makes of it (after a change to the folding or the
singular, rebuild the tables); exit 1 otherwise.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections import defaultdict
from pathlib import Path

from knowledge.recall.terms import WORD, term_and_form
from scripts.lib.harness import ROOT, did_work

OUT = ROOT / "layers" / "core" / "knowledge" / "recall" / "data"
ZIPF_MIN = 3.0


def table(lang: str) -> dict[str, float]:
    from wordfreq import get_frequency_dict  # a tool of this script only, never of the layer

    summed: dict[str, float] = defaultdict(float)
    for word, frequency in get_frequency_dict(lang, wordlist="small").items():
        if not WORD.fullmatch(word) or any(c.isdigit() for c in word):
            continue
        summed[term_and_form(word.lower())[1]] += frequency
    return {form: 9 + math.log10(f) for form, f in summed.items() if 9 + math.log10(f) >= ZIPF_MIN}


def write(lang: str) -> Path:
    by_step: dict[int, list[str]] = defaultdict(list)
    for form, zipf in table(lang).items():
        by_step[round(zipf * 10)].append(form)
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / f"frequency-{lang}.txt"
    lines = [f"{step} {' '.join(sorted(forms))}" for step, forms in sorted(by_step.items(), reverse=True)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def check(path: Path) -> tuple[int, int]:
    """(forms as the index reads them, forms) of a shipped table; a step out of order counts as none."""
    steps, forms = [], []
    for line in path.read_text(encoding="utf-8").splitlines():
        step, *words = line.split()
        steps.append(int(step))
        forms += words
    if steps != sorted(steps, reverse=True):
        print(f"{path.relative_to(ROOT)}: its steps do not descend", file=sys.stderr)
        return 0, len(forms)
    return sum(term_and_form(form)[1] == form for form in forms), len(forms)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lang", action="append", help="a language code (default: pt and en)")
    parser.add_argument("--check", action="store_true", help="check the shipped tables against the code; write nothing")
    args = parser.parse_args()
    if args.check:
        counts = [check(OUT / f"frequency-{lang}.txt") for lang in args.lang or ["pt", "en"]]
        good, total = sum(c[0] for c in counts), sum(c[1] for c in counts)
        did_work("shipped forms are what the index makes of them", good, total)
        return 0 if good == total else 1
    for lang in args.lang or ["pt", "en"]:
        path = write(lang)
        print(f"{path.relative_to(ROOT)}: {sum(len(line.split()) - 1 for line in path.read_text().splitlines())} forms, "
              f"{path.stat().st_size // 1024} KB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
