#!/usr/bin/env python3
"""The studio's search at scale, measured: where the intended concept comes and how many match.

    ./run script bench.studio_search [--sizes 1000 5000] [--runs 20] [--before DIR] [--json] [--smoke]

For an agent of 1,000 and of 5,000 synthetic concepts (scripts/lib/synthetic_corpus.py) plus three
intended ones written first (so "last written first" puts them last), the container's list state
(knowledge.curation.listing.HeldList) is built in process and each query is answered as
GET /concepts?q=…&limit=50 orders it (Studio.list's search step and its first page of rows, with
their snippets where the code makes them; no S3, no HTTP). Per query: the intended concept's rank,
the match count (`total`), and p50 over `--runs` of that step.

`--before DIR`: also run the same with the core layer at DIR (e.g. main's, exported with
`git archive main layers/core | tar -x -C /tmp/before`) and print both side by side. The run ends
with how many of the timed searches found their intended concept (none fails it).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

from scripts.lib import harness
from scripts.lib.harness import ROOT, did_work
from scripts.lib.synthetic_corpus import corpus

INTENDED = {  # name: (description, body)
    "despacho-no-mesmo-dia": ("Pedidos pagos até 12h saem no mesmo dia útil.",
                              "O despacho acontece no mesmo dia para pedidos aprovados até o meio-dia."),
    "cep-sudeste-cd-campinas": ("CEPs do Sudeste atendidos pelo centro de distribuição.",
                                "Faixa de CEP 13000-13999; prazo de 2 dias úteis."),
    "frete-gratis-acima-de-199": ("Frete grátis nas compras acima de R$199.",
                                  "Vale para todo o Brasil, exceto itens de montagem."),
}
QUERIES = (("an exact name", "despacho-no-mesmo-dia", "despacho-no-mesmo-dia"),
           ("a name word", "campinas", "cep-sudeste-cd-campinas"),
           ("three words", "frete grátis 199", "frete-gratis-acima-de-199"))
PAGE = 50


def held_list(size: int):
    from knowledge.curation.listing import HeldList
    from knowledge.format.concept import Concept
    from knowledge.store.concepts import StoredConcept

    start = datetime(2026, 1, 1, tzinfo=timezone.utc)
    intended = [Concept(name=name, description=description, type="fact", provenance="observed", confidence=0.6,
                        sources=("sess_x",), occurrences=1, created_at=start, updated_at=start, body=body)
                for name, (description, body) in INTENDED.items()]
    concepts, _ = corpus(size - len(INTENDED))
    held = HeldList()
    for i, concept in enumerate([*intended, *concepts]):
        written = (start + timedelta(seconds=i)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        held.take(StoredConcept(concept.name, concept.render().encode(), f'"{i}"', None,
                                actor="engine", reason="created", written_at=written))
    for name in INTENDED:  # the substring fallback's text, as Studio keeps it (folded name and description)
        assert name in held.folded
    return held


def answer(held, q: str) -> list[str]:
    """The names of GET /concepts?q=q (no sort chosen) in order, the first page's rows made."""
    from knowledge.curation.listing import sorted_names

    names = list(held.summaries)
    try:
        from knowledge.curation import relevance
    except ImportError:  # before: words ORed through the index, plus substrings, by written_at
        found = held.matching(q)
        ordered = sorted_names([n for n in names if n in found], "written_at", True, held)
        [held.row(n) for n in ordered[:PAGE]]
        return ordered
    ordered = relevance.search(held, q, names)
    [{**held.row(n), "match": relevance.matched(held, n, q)} for n in ordered[:PAGE]]
    return ordered


def measure(sizes: list[int], runs: int) -> list[dict]:
    out = []
    for size in sizes:
        held = held_list(size)
        for kind, q, intended in QUERIES:
            ordered = answer(held, q)
            timings = []
            for _ in range(runs):
                started = time.perf_counter()
                answer(held, q)
                timings.append((time.perf_counter() - started) * 1000)
            out.append({"concepts": len(held.summaries), "kind": kind, "q": q, "intended": intended,
                        "rank": ordered.index(intended) + 1 if intended in ordered else None,
                        "total": len(ordered), "p50_ms": round(statistics.median(timings), 1)})
    return out


def run_with(core: Path, args: argparse.Namespace) -> list[dict]:
    env = {**os.environ, "PYTHONPATH": str(core)}  # the layer measured; the scripts from the repository root
    done = harness.child(__spec__.name, "--json", "--runs", str(args.runs), "--sizes", *map(str, args.sizes),
                         env=env)
    return json.loads(done.stdout)


def print_report(after: list[dict], before: list[dict] | None) -> None:
    def rank(row):
        return "absent" if row["rank"] is None else str(row["rank"])

    head = "| concepts | query | intended | "
    head += "before: rank / matches / p50 | after: rank / matches / p50 |" if before else "rank | matches | p50 |"
    print(head)
    print("|" + "---|" * (5 if before else 6))
    for i, row in enumerate(after):
        cells = [f"{row['concepts']:,}", f"{row['kind']}: `{row['q']}`", f"`{row['intended']}`"]
        if before:
            b = before[i]
            cells += [f"{rank(b)} / {b['total']:,} / {b['p50_ms']} ms",
                      f"{rank(row)} / {row['total']:,} / {row['p50_ms']} ms"]
        else:
            cells += [rank(row), f"{row['total']:,}", f"{row['p50_ms']} ms"]
        print("| " + " | ".join(cells) + " |")


def main() -> None:
    parser = harness.parser(__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 5000])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--before", type=Path, help="a core layer (layers/core) to measure as the baseline")
    args = parser.parse_args()
    if args.smoke:
        args.sizes, args.runs = [100], 2
    if args.json:
        after = measure(args.sizes, args.runs)
        print(json.dumps(after))
    else:
        after = run_with(ROOT / "layers" / "core", args)
        before = run_with(args.before, args) if args.before else None
        print_report(after, before)
    did_work("timed searches found their intended concept", sum(row["rank"] is not None for row in after), len(after),
             as_json=args.json)


if __name__ == "__main__":
    main()
