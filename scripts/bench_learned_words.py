#!/usr/bin/env python3
"""What learned words cost a warm search: the index's `relevant` (retrieval's ranking and floor) on
the synthetic corpus of scripts/bench_knowledge_index.py, without learned words and with LEARNED
words per concept (words of the corpus's vocabulary, so messages meet them), in the same run.

    .venv/bin/python scripts/bench_learned_words.py [--sizes 1000 5000] [--queries 400] [--learned 8]

Prints p50 and p95 in ms per search, the build time, and the share of queries that inject. A
learned word is looked up as one more dictionary key per message word; the figures say what that
and the extra postings cost. No S3: the per-turn path reads no learned word from S3 (they are in
the concepts the warm index holds; tests/integration/test_learned_words.py counts requests).
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # beside the other scripts, not a package
from synthetic_corpus import corpus, queries  # noqa: E402

from knowledge.format.learned_words import LearnedWord, word_problem  # noqa: E402
from knowledge_dev.local_aws import percentile  # noqa: E402


def build(concepts):
    from knowledge.recall.index import Index

    index = Index()
    start = time.perf_counter()
    for c in concepts:
        index.upsert(c.name, "etag", c, b"")
    index.settle()
    return index, (time.perf_counter() - start) * 1000


def with_learned(concepts, zipf, per_concept: int, seed: int = 11):
    rng = random.Random(seed)
    words = [w for w in zipf.words if word_problem(w) is None and len(w) >= 4]
    out = []
    for c in concepts:
        chosen = list(dict.fromkeys(rng.choice(words) for _ in range(per_concept * 2)))[:per_concept]
        out.append(c.replace(learned_words=tuple(LearnedWord(w, "sighting", 3, date(2026, 11, 20)) for w in chosen)))
    return out


def timed(index, qs):
    for q in qs:  # warm the stemmer's memo, as a warm container has
        index.relevant(q, 5, 1.0)
    out = []
    for q in qs:
        start = time.perf_counter()
        index.relevant(q, 5, 1.0)
        out.append((time.perf_counter() - start) * 1000)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 5000])
    parser.add_argument("--queries", type=int, default=400)
    parser.add_argument("--learned", type=int, default=8, help="learned words per concept")
    args = parser.parse_args()
    print(f"{'concepts':>8} {'learned':>8} {'build ms':>9} {'p50 ms':>8} {'p95 ms':>8} {'injects':>8}")
    for size in args.sizes:
        concepts, zipf = corpus(size)
        qs = queries(zipf, args.queries)
        for label, items in (("none", concepts), (str(args.learned), with_learned(concepts, zipf, args.learned))):
            index, build_ms = build(items)
            ms = timed(index, qs)
            injects = sum(1 for q in qs if index.relevant(q, 5, 1.0)) / len(qs)
            print(f"{size:>8} {label:>8} {build_ms:>9.0f} {statistics.median(ms):>8.3f} {percentile(ms, 0.95):>8.3f} "
                  f"{injects:>8.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
