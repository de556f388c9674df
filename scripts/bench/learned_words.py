#!/usr/bin/env python3
"""What learned words cost a warm search: the index's `relevant` (retrieval's ranking and floor) on
the synthetic corpus of scripts/lib/synthetic_corpus.py, without learned words and with LEARNED
words per concept (words of the corpus's vocabulary, so messages meet them), in the same run.

    ./run script bench.learned_words [--sizes 1000 5000] [--queries 400] [--learned 8] [--json] [--smoke]

Prints p50 and p95 in ms per search, the build time, and the share of queries that inject. A
learned word is looked up as one more dictionary key per message word; the figures say what that
and the extra postings cost. No S3: the per-turn path reads no learned word from S3 (they are in
the concepts the warm index holds; tests/integration/test_learned_words.py counts requests).
"""

from __future__ import annotations

import random
import statistics
import sys
import time
from datetime import date

from knowledge.format.learned_words import LearnedWord, word_problem
from scripts.lib.harness import Column, did_work, emit, parser, percentile, print_table, timed
from scripts.lib.synthetic_corpus import corpus, queries


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


def searched(index, qs) -> list[float]:
    for q in qs:  # warm the stemmer's memo, as a warm container has
        index.relevant(q, 5, 1.0)
    return timed(lambda q: index.relevant(q, 5, 1.0), qs)


COLUMNS = [Column("concepts", 8, lambda r: str(r["concepts"])), Column("learned", 8, lambda r: r["learned"]),
           Column("build ms", 9, lambda r: f"{r['build_ms']:.0f}"), Column("p50 ms", 8, lambda r: f"{r['p50_ms']:.3f}"),
           Column("p95 ms", 8, lambda r: f"{r['p95_ms']:.3f}"), Column("injects", 8, lambda r: f"{r['injects']:.1%}")]


def main() -> int:
    args_parser = parser(__doc__)
    args_parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 5000])
    args_parser.add_argument("--queries", type=int, default=400)
    args_parser.add_argument("--learned", type=int, default=8, help="learned words per concept")
    args = args_parser.parse_args()
    if args.smoke:
        args.sizes, args.queries = [100], 20
    rows, injecting = [], 0
    for size in args.sizes:
        concepts, zipf = corpus(size)
        qs = queries(zipf, args.queries)
        for label, items in (("none", concepts), (str(args.learned), with_learned(concepts, zipf, args.learned))):
            index, build_ms = build(items)
            ms = searched(index, qs)
            injects = sum(1 for q in qs if index.relevant(q, 5, 1.0))
            injecting += injects
            rows.append({"concepts": size, "learned": label, "build_ms": build_ms, "p50_ms": statistics.median(ms),
                         "p95_ms": percentile(ms, 0.95), "injects": injects / len(qs)})
    emit(rows, args.json, lambda: print_table(COLUMNS, rows))
    did_work("timed searches injected something", injecting, 2 * len(args.sizes) * len(qs), as_json=args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
