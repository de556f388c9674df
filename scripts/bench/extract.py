#!/usr/bin/env python3
"""Extraction's own cost per turn, excluding the model: gates + PII redaction + stamping, and
the known-concepts list the prompt carries.

    ./run script bench.extract [--runs 500] [--json] [--smoke]

A 20-message turn and a 10-candidate answer (two with PII, two rejected). Prints p50/p95
per stage and in total; the target is a total p50 of at most 5 ms. Then, over the labelled
convergence turns and that 20-message turn, for an agent of 100 and of 1000 concepts (the 45
labelled ones, padded as scripts/reports/convergence.py pads them): the names listed (20 at
most), the bytes the list adds to the prompt (p50/p95, and the most the prompt code allows),
and the time to choose and render it from a warm index. It says how many of the timed runs'
candidates became sightings (the gates refuse two of each ten by design).
"""

from __future__ import annotations

import json
import statistics
import sys
import time

from knowledge.format.sighting import Sighting
from knowledge.format.turn import parse_turn
from knowledge.learning.extract import evidence_ref, stamp
from knowledge.learning.gates import gate
from knowledge.learning.known import KNOWN_MAX, choose
from knowledge.learning.prompt import KNOWN_PROMPT_MAX_BYTES, extraction_prompt
from knowledge.recall.index import Index
from scripts.lib.harness import did_work, emit, parser, percentile
from scripts.reports import convergence as convergence_report

LINES = [
    "Pedidos para CEPs de 13000 a 13999 saem do nosso CD de Campinas e chegam em 1 a 2 dias úteis.",
    "Compras acima de R$199 têm frete grátis no Sudeste; abaixo disso o frete é calculado no checkout.",
    "Pedidos pagos até as 14h em dias úteis são despachados no mesmo dia.",
    "Trocas são aceitas em até 30 dias após a entrega, na embalagem original.",
    "Parcelamos em até 10x sem juros no cartão, parcela mínima de R$30.",
]


def build_turn() -> str:
    messages = []
    for i in range(20):
        role = "user" if i % 2 == 0 else "assistant"
        text = LINES[i % len(LINES)] + (f" Meu e-mail é cliente{i}@example.com e meu telefone (11) 98765-43{i:02d}."
                                        if role == "user" else " Posso ajudar em algo mais?")
        messages.append({"role": role, "content": text * 3})
    return json.dumps({"tenant": "default", "agent": "store-support", "session_id": "sess_bench",
                       "turn_id": "turn_1", "completed_at": "2026-11-20T14:05:31Z", "messages": messages})


def build_answer() -> str:
    items = []
    for i in range(10):
        line = LINES[i % len(LINES)]
        items.append({"name": f"Conceito Número {i}", "description": line[:120],
                      "type": "fact" if i % 3 else "policy",
                      "body": (line + " ") * 6 + (" Fale com suporte@loja.com.br ou (11) 3456-7890." if i < 2 else ""),
                      "evidence": line[10:80] if i != 9 else "não está na conversa de jeito nenhum"})
    items[8]["provenance"] = "policy"
    return json.dumps(items, ensure_ascii=False)


def _prompt_bytes(prompt: tuple[str, str]) -> int:
    return sum(len(text.encode("utf-8")) for text in prompt)


def known_list_cost(agent_sizes: tuple[int, ...] = (100, 1000), repeats: int = 20) -> dict:
    """Per agent size: names listed, bytes the list adds per turn and time to choose it (warm index)."""
    rows = [row for path in convergence_report.SETS.values() for row in convergence_report.load_turns(path)]
    turns = [parse_turn(json.dumps(row["turn"], ensure_ascii=False)) for row in rows] + [parse_turn(build_turn())]
    types = ("fact", "entity", "procedure", "policy", "objection")
    base = convergence_report.agent_concepts()
    out = {}
    for size in agent_sizes:
        index = Index()
        for concept in base + convergence_report.padding(size - len(base)):
            index.upsert(concept.name, "etag", concept, concept.render().encode())
        index.settle()
        extra, listed, timings = [], [], []
        for turn in turns:
            bare = _prompt_bytes(extraction_prompt(turn, types, None))
            for _ in range(repeats):
                t0 = time.perf_counter()
                known = choose(index, turn, KNOWN_MAX)
                prompt = extraction_prompt(turn, types, None, known)
                timings.append((time.perf_counter() - t0) * 1000)
            extra.append(_prompt_bytes(prompt) - bare)
            listed.append(len(known))
        out[size] = {"turns": len(turns), "listed_max": max(listed), "listed_p50": statistics.median(listed),
                     "extra_bytes_p50": statistics.median(extra), "extra_bytes_p95": percentile(extra, 0.95),
                     "extra_bytes_max": max(extra), "choose_p50_ms": statistics.median(timings),
                     "choose_p95_ms": percentile(timings, 0.95)}
    return {"limit": KNOWN_MAX, "bound_bytes": KNOWN_PROMPT_MAX_BYTES, "agents": out}


def main() -> int:
    args_parser = parser(__doc__)
    args_parser.add_argument("--runs", type=int, default=500)
    args = args_parser.parse_args()
    if args.smoke:
        args.runs = 5
    body, answer = build_turn(), build_answer()
    types = ("fact", "policy", "objection")
    stages: dict[str, list[float]] = {"parse turn": [], "gates + redaction": [], "stamp + render": [], "total": []}
    accepted = stamped = 0
    for _ in range(args.runs):
        t0 = time.perf_counter()
        turn = parse_turn(body)
        t1 = time.perf_counter()
        report = gate(answer, turn.messages, types)
        t2 = time.perf_counter()
        sightings = [Sighting.of(turn.tenant, turn.agent, turn.session_id, turn.turn_id, stamp(c, turn),
                                 evidence_ref(c, turn)).body() for c in report.candidates]
        t3 = time.perf_counter()
        accepted = len(sightings)
        stamped += accepted
        for name, value in zip(stages, (t1 - t0, t2 - t1, t3 - t2, t3 - t0)):
            stages[name].append(value * 1000)
    table = {name: {"p50_ms": statistics.median(v), "p95_ms": percentile(v, 0.95)} for name, v in stages.items()}
    result = {"runs": args.runs, "messages": 20, "candidates": 10, "accepted": accepted,
              "rejected": dict(report.rejected), "redacted": dict(report.redacted), "stages": table,
              "target_total_p50_ms": 5.0, "meets_target": table["total"]["p50_ms"] <= 5.0,
              "known_list": known_list_cost((100,), 2) if args.smoke else known_list_cost()}
    emit(result, args.json, lambda: print_report(result))
    did_work("timed candidates became sightings", stamped, 10 * args.runs, as_json=args.json)
    return 0


def print_report(result: dict) -> None:
    table = result["stages"]
    print(f"extraction without the model: 20-message turn, 10 candidates, {result['runs']} runs "
          f"({result['accepted']} accepted, rejected {result['rejected']}, redacted {result['redacted']})\n")
    print(f"{'stage':<20} {'p50 ms':>8} {'p95 ms':>8}")
    for name, row in table.items():
        print(f"{name:<20} {row['p50_ms']:>8.3f} {row['p95_ms']:>8.3f}")
    print(f"\ntarget: total p50 <= 5 ms -> {'met' if result['meets_target'] else 'NOT met'}")
    known = result["known_list"]
    print(f"\nknown-concepts list in the prompt (up to {known['limit']} names; the prompt code caps what it "
          f"adds at {known['bound_bytes']} bytes), warm index:")
    print(f"{'agent':>14} {'turns':>6} {'names p50/max':>14} {'+bytes p50':>11} {'+bytes p95':>11} "
          f"{'+bytes max':>11} {'choose p50 ms':>14} {'p95 ms':>8}")
    for size, row in known["agents"].items():
        print(f"{f'{size} concepts':>14} {row['turns']:>6} {row['listed_p50']:>8.0f}/{row['listed_max']:<5} "
              f"{row['extra_bytes_p50']:>11.0f} {row['extra_bytes_p95']:>11.0f} {row['extra_bytes_max']:>11.0f} "
              f"{row['choose_p50_ms']:>14.3f} {row['choose_p95_ms']:>8.3f}")


if __name__ == "__main__":
    sys.exit(main())
