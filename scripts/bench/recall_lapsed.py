#!/usr/bin/env python3
"""What leaving expired, not yet started and stale concepts out of recall costs a retrieve.

    ./run script bench.recall_lapsed [--json] [--smoke]

1000 concepts (one in twenty past its valid_until, updated_at spread over 400 days, so about half
stale): three searches per call without the filter (the baseline, same run), with the cached set
of lapsed concepts (every call between two changes), and the set worked out again (once per
change of the index, or when a concept crosses a date). Prints p50 / p95 and the ratio, and how
many of the timed searches selected a concept.
"""
from __future__ import annotations

import random
import sys
from datetime import datetime, timedelta, timezone

from knowledge.format.config import KnowledgeConfig
from knowledge.recall.retrieve import lapsed_now, select
from knowledge.recall.snapshot import Summary
from knowledge.recall.warm import AgentKnowledge
from knowledge_dev.samples import make_concept
from scripts.lib.harness import Counted, did_work, emit, p50_p95, parser, timed_calls

CONCEPTS = 1000
WORDS = ("frete gratis campinas pix boleto cartao troca devolucao prazo entrega sofa mesa cadeira cama tapete "
         "luminaria cortina almofada estante rack").split()
MESSAGES = ("o frete é grátis para campinas?", "posso pagar no pix?", "qual o prazo de troca do sofa?")


def agent(now: datetime, concepts: int = CONCEPTS) -> AgentKnowledge:
    rng = random.Random(1)
    knowledge = AgentKnowledge(config=KnowledgeConfig())
    for i in range(concepts):
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


def main() -> int:
    args = parser(__doc__).parse_args()
    concepts, repeats = (100, 10) if args.smoke else (CONCEPTS, 300)
    now = datetime.now(timezone.utc).replace(microsecond=0)
    knowledge, config = agent(now, concepts), KnowledgeConfig()
    cached = lapsed_now(knowledge, config, now)
    searched = Counted(select, bool)
    base = p50_p95(timed_calls(lambda: [searched(knowledge.index, m, config) for m in MESSAGES], repeats))
    filtered = p50_p95(timed_calls(lambda: [searched(knowledge.index, m, config,
                                                     lapsed_now(knowledge, config, now, cached).names)
                                            for m in MESSAGES], repeats))
    again = p50_p95(timed_calls(lambda: lapsed_now(knowledge, config, now), max(1, repeats // 10)))
    result = {"concepts": concepts, "out_of_recall": len(cached.names), "baseline": base, "lapsed_cached": filtered,
              "lapsed_again": again}
    emit(result, args.json, lambda: print_report(result))
    did_work("timed searches selected a concept", searched.done, searched.calls, as_json=args.json)
    return 0


def print_report(result: dict) -> None:
    base, filtered, again = result["baseline"], result["lapsed_cached"], result["lapsed_again"]
    print(f"{result['concepts']} concepts, {result['out_of_recall']} out of recall")
    print(f"  {'':40} {'p50 ms':>8} {'p95 ms':>8}")
    print(f"  {'3 searches, no filter (baseline)':40} {base[0]:8.3f} {base[1]:8.3f}")
    print(f"  {'3 searches, lapsed left out (cached)':40} {filtered[0]:8.3f} {filtered[1]:8.3f}"
          f"   {filtered[0] / base[0]:.2f}x the baseline")
    print(f"  {'lapsed worked out again (on a change)':40} {again[0]:8.3f} {again[1]:8.3f}")


if __name__ == "__main__":
    sys.exit(main())
