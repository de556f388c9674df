#!/usr/bin/env python3
"""What leaving expired, not yet started and stale concepts out of recall costs a retrieve.

    PYTHONPATH=layers/core:tests python scripts/bench_recall_lapsed.py

1000 concepts (one in twenty past its valid_until, updated_at spread over 400 days, so about half
stale): three searches per call without the filter (the baseline, same run), with the cached set
of lapsed concepts (every call between two changes), and the set worked out again (once per
change of the index, or when a concept crosses a date). Prints p50 / p95 and the ratio.
"""
from __future__ import annotations

import random
import statistics
import sys
import time
from datetime import datetime, timedelta, timezone

from helpers.concepts import make_concept

from knowledge.format.config import KnowledgeConfig
from knowledge.recall.retrieve import lapsed_now, select
from knowledge.recall.snapshot import Summary
from knowledge.recall.warm import AgentKnowledge

CONCEPTS = 1000
WORDS = ("frete gratis campinas pix boleto cartao troca devolucao prazo entrega sofa mesa cadeira cama tapete "
         "luminaria cortina almofada estante rack").split()
MESSAGES = ("o frete é grátis para campinas?", "posso pagar no pix?", "qual o prazo de troca do sofa?")


def agent(now: datetime) -> AgentKnowledge:
    rng = random.Random(1)
    knowledge = AgentKnowledge(config=KnowledgeConfig())
    for i in range(CONCEPTS):
        words = " ".join(rng.sample(WORDS, 6))
        updated = now - timedelta(days=rng.randint(0, 400))
        until = now.date() - timedelta(days=1) if i % 20 == 0 else None
        concept = make_concept(f"c-{i}", description=words, body=f"{words} item {i}.", created_at=updated,
                               updated_at=updated, valid_until=until)
        knowledge.index.upsert(concept.name, f"e{i}", concept, concept.render().encode())
        knowledge.summaries[concept.name] = Summary(
            f"e{i}", 1, updated.strftime("%Y-%m-%dT%H:%M:%SZ"), False, 0, None, "engine", None, None,
            until.isoformat() if until else None)
    knowledge.index.settle()
    return knowledge


def timed(call, repeats: int = 300) -> tuple[float, float]:
    out = []
    for _ in range(repeats):
        started = time.perf_counter()
        call()
        out.append((time.perf_counter() - started) * 1000)
    out.sort()
    return statistics.median(out), out[int(len(out) * 0.95)]


def main() -> int:
    now = datetime.now(timezone.utc).replace(microsecond=0)
    knowledge, config = agent(now), KnowledgeConfig()
    cached = lapsed_now(knowledge, config, now)
    base = timed(lambda: [select(knowledge.index, m, config) for m in MESSAGES])
    filtered = timed(lambda: [select(knowledge.index, m, config, lapsed_now(knowledge, config, now, cached).names)
                              for m in MESSAGES])
    again = timed(lambda: lapsed_now(knowledge, config, now), repeats=30)
    print(f"{CONCEPTS} concepts, {len(cached.names)} out of recall")
    print(f"  {'':40} {'p50 ms':>8} {'p95 ms':>8}")
    print(f"  {'3 searches, no filter (baseline)':40} {base[0]:8.3f} {base[1]:8.3f}")
    print(f"  {'3 searches, lapsed left out (cached)':40} {filtered[0]:8.3f} {filtered[1]:8.3f}"
          f"   {filtered[0] / base[0]:.2f}x the baseline")
    print(f"  {'lapsed worked out again (on a change)':40} {again[0]:8.3f} {again[1]:8.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
