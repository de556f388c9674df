#!/usr/bin/env python3
"""What recalling a tenant's shared concepts beside an agent's own costs a retrieve (CPU only: between
refreshes neither index sends an S3 request).

    PYTHONPATH=layers/core:tests python scripts/bench_shared_recall.py

An agent of 1,000 concepts alone (the baseline, same run), then beside a shared base of 200 and of
1,000 (one in ten of the agent's names also shared, so shadowed): three messages per call through
retrieve's select(). Prints p50 / p95 and the ratio.
"""
from __future__ import annotations

import random
import statistics
import sys
import time

from helpers.concepts import make_concept

from knowledge.format.config import KnowledgeConfig
from knowledge.recall.index import Index
from knowledge.recall.merged import shadowed
from knowledge.recall.retrieve import select

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


def timed(call, repeats: int = 300) -> tuple[float, float]:
    out = []
    for _ in range(repeats):
        started = time.perf_counter()
        call()
        out.append((time.perf_counter() - started) * 1000)
    out.sort()
    return statistics.median(out), out[int(len(out) * 0.95)]


def main() -> int:
    config = KnowledgeConfig()
    own = index_of("own", 1000, 1)
    base = timed(lambda: [select(own, m, config) for m in MESSAGES])
    print("agent of 1000 concepts; 3 messages per call")
    print(f"  {'':44} {'p50 ms':>8} {'p95 ms':>8}")
    print(f"  {'the agent alone (baseline)':44} {base[0]:8.3f} {base[1]:8.3f}")
    for size in (200, 1000):
        shared = index_of("shared", size, 2)
        out = shadowed(own, {}, shared)
        both = timed(lambda: [select(own, m, config, shared=(shared, out)) for m in MESSAGES])
        label = f"beside {size} shared ({len(out)} shadowed)"
        print(f"  {label:44} {both[0]:8.3f} {both[1]:8.3f}   {both[0] / base[0]:.2f}x the baseline")
    shared = index_of("shared", 1000, 2)
    again = timed(lambda: shadowed(own, {}, shared), repeats=100)
    print(f"  {'which shared names are shadowed (per call)':44} {again[0]:8.3f} {again[1]:8.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
