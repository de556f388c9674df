#!/usr/bin/env python3
"""What recalling a tenant's shared concepts beside an agent's own costs a retrieve (CPU only: between
refreshes neither index sends an S3 request).

    ./run script bench.shared_recall [--json] [--smoke]

An agent of 1,000 concepts alone (the baseline, same run), then beside a shared base of 200 and of
1,000 (one in ten of the agent's names also shared, so shadowed): three messages per call through
retrieve's select(). Prints p50 / p95 and the ratio, and how many of the timed searches selected
a concept.
"""
from __future__ import annotations

import random
import sys

from knowledge.format.config import KnowledgeConfig
from knowledge.recall.index import Index
from knowledge.recall.merged import shadowed
from knowledge.recall.retrieve import select
from knowledge_dev.samples import make_concept
from scripts.lib.harness import Counted, did_work, emit, p50_p95, parser, timed_calls

WORDS = ("frete gratis campinas pix boleto cartao troca devolucao prazo entrega sofa mesa cadeira cama tapete "
         "luminaria cortina almofada estante rack garantia montagem").split()
MESSAGES = ("o frete é grátis para campinas?", "posso pagar no pix?", "qual o prazo de troca do sofa?")


def index_of(prefix: str, count: int, seed: int) -> Index:
    rng = random.Random(seed)
    index = Index()
    for i in range(count):
        words = " ".join(rng.sample(WORDS, 6))
        name = f"c-{i}" if i % 10 == 0 else f"{prefix}-{i}"  # one in ten names in both scopes
        concept = make_concept(name, description=words, body=f"{words} item {i}.")
        index.upsert(concept.name, f"e{i}", concept, concept.render().encode())
    index.settle()
    return index


def main() -> int:
    args = parser(__doc__).parse_args()
    own_size, shared_sizes, repeats = (100, (20, 100), 10) if args.smoke else (1000, (200, 1000), 300)
    config = KnowledgeConfig()
    searched = Counted(select, bool)
    own = index_of("own", own_size, 1)
    rows = [{"label": "the agent alone (baseline)",
             "p50_p95": p50_p95(timed_calls(lambda: [searched(own, m, config) for m in MESSAGES], repeats))}]
    for size in shared_sizes:
        shared = index_of("shared", size, 2)
        out = shadowed(own, {}, shared)
        both = p50_p95(timed_calls(lambda: [searched(own, m, config, shared=(shared, out)) for m in MESSAGES], repeats))
        rows.append({"label": f"beside {size} shared ({len(out)} shadowed)", "p50_p95": both,
                     "ratio": both[0] / rows[0]["p50_p95"][0]})
    shared = index_of("shared", shared_sizes[-1], 2)
    rows.append({"label": "which shared names are shadowed (per call)",
                 "p50_p95": p50_p95(timed_calls(lambda: shadowed(own, {}, shared), max(1, repeats // 3)))})
    emit({"concepts": own_size, "rows": rows}, args.json, lambda: print_report(own_size, rows))
    did_work("timed searches selected a concept", searched.done, searched.calls, as_json=args.json)
    return 0


def print_report(own_size: int, rows: list[dict]) -> None:
    print(f"agent of {own_size} concepts; 3 messages per call")
    print(f"  {'':44} {'p50 ms':>8} {'p95 ms':>8}")
    for row in rows:
        p50, p95 = row["p50_p95"]
        ratio = f"   {row['ratio']:.2f}x the baseline" if "ratio" in row else ""
        print(f"  {row['label']:44} {p50:8.3f} {p95:8.3f}{ratio}")


if __name__ == "__main__":
    sys.exit(main())
