#!/usr/bin/env python3
"""Recall in a small index (a tenant's few shared policies, a new agent's first FAQ rows), with
`min_score` read as the floor reads rarity (Index.gate) against the raw BM25 score
(Index(scaled_gate=False)), in the same run.

    ./run script reports.small_index [--heldout] [--json] [--smoke]

Each labelled store of tests/data/stores/ (the five tuning stores; `--heldout`: the held-out one,
read once) is cut into small indexes: each concept alone, then disjoint groups of 3, 5 and 10 in the
file's order (each concept as scripts/reports/stores.py writes it). Every test message of the store
is asked of every index, through the engine's own selection (knowledge.recall.retrieve.select, the
store's defaults: `top_k` 5, `min_score` 1.0, no vocabulary). A message whose expected concepts
the index holds is *answerable*: hit@5 counts it.
Another concept's question is *unanswerable*, and the off-topic slice's messages (small talk, other
subjects) are counted apart: "injected" is the share of each for which the index injected anything,
which it should not.

Then the case shared knowledge is for: each policy of each store moved, alone, to a one-concept
shared index recalled beside the agent's other concepts (select with `shared`, as RetrieveFunction
merges them), against the same policy kept as the agent's own, raw and scaled `min_score`: how
often the policy's own questions get it, how often the others' get it too, and the others' hit@5.
It ends with the answerable messages a one-concept index answered (scaled min_score). --smoke: one
store, one-concept indexes, two of its policies shared.
"""

from __future__ import annotations

import json
import sys

from scripts.lib.harness import ROOT, did_work, parser

STORES = ROOT / "tests" / "data" / "stores"
SIZES = (1, 3, 5, 10)


def measure(store: dict, size: int, gated: bool) -> dict:
    from knowledge.format.config import parse_config
    from knowledge.recall.retrieve import select
    from scripts.lib.synthetic_corpus import build_index as index_of
    from scripts.reports.stores import concepts_of

    config = parse_config("knowledge:\n  retrieve: true\n")
    concepts = concepts_of(store)
    groups = [concepts[i:i + size] for i in range(0, len(concepts), size)]
    asked = hits = unanswerable = injected = off = off_injected = 0
    for group in groups:
        index, names = index_of(group, scaled_gate=gated), {c.name for c in group}
        for test in store["tests"]:
            shown = [i.hit.name for i in select(index, test["message"], config)]
            if names & set(test["expected"]):
                asked += 1
                hits += bool(names & set(test["expected"]) & set(shown))
            elif test["slice"] == "off-topic" or not test["expected"]:
                off += 1
                off_injected += bool(shown)
            else:
                unanswerable += 1
                injected += bool(shown)
    return {"indexes": len(groups), "answerable": asked, "hit5": hits / asked if asked else None,
            "unanswerable": unanswerable, "injected": injected / unanswerable if unanswerable else None,
            "off_topic": off, "off_injected": off_injected / off if off else None}


def beside(store: dict, policies: int | None = None) -> dict:
    """Counts for one store, each policy in turn (the first `policies` of them) as the tenant's one shared concept."""
    from knowledge.format.config import parse_config
    from knowledge.recall.retrieve import select
    from scripts.lib.synthetic_corpus import build_index as index_of
    from scripts.reports.stores import concepts_of

    config = parse_config("knowledge:\n  retrieve: true\n")
    concepts = concepts_of(store)
    whole = index_of(concepts)
    as_own = {t["id"]: [i.hit.name for i in select(whole, t["message"], config)] for t in store["tests"]}
    counts = {key: [0, 0] for key in ("hit", "hit_raw", "hit_own", "stray", "stray_raw", "stray_own",
                                      "others", "others_own")}

    def add(key: str, yes: bool) -> None:
        counts[key][0] += yes
        counts[key][1] += 1

    others = {policy.name: [c for c in concepts if c.name != policy.name]
              for policy in [c for c in concepts if c.type == "policy"][:policies]}
    for policy in [c for c in concepts if c.name in others]:
        for raw in (True, False):
            # raw: both indexes read min_score as the raw BM25 score, as before the floor scaled it
            own = index_of(others[policy.name], scaled_gate=not raw)
            shared = index_of([policy], scaled_gate=not raw)
            suffix = "_raw" if raw else ""
            for test in store["tests"]:
                shown = [i.hit.name for i in select(own, test["message"], config, shared=(shared, set()))]
                before = as_own[test["id"]]
                if policy.name in test["expected"]:
                    add("hit" + suffix, policy.name in shown)
                    if raw:
                        add("hit_own", policy.name in before)
                    continue
                add("stray" + suffix, policy.name in shown)
                if raw:
                    add("stray_own", policy.name in before)
                elif test["expected"]:
                    add("others", bool(set(test["expected"]) & set(shown)))
                    add("others_own", bool(set(test["expected"]) & set(before)))
    return counts


def main() -> int:
    parser_ = parser(__doc__)
    parser_.add_argument("--heldout", action="store_true")
    args = parser_.parse_args()
    paths = sorted((STORES / "heldout").glob("*.json")) if args.heldout else sorted(STORES.glob("*.json"))
    paths = paths[:1] if args.smoke else paths
    stores = [json.loads(p.read_text(encoding="utf-8")) for p in paths]
    rows = []
    for size in (1,) if args.smoke else SIZES:
        for gated in (False, True):
            total = {"answerable": 0, "hits": 0.0, "unanswerable": 0, "injected": 0.0, "indexes": 0,
                     "off_topic": 0, "off_injected": 0.0}
            for store in stores:
                r = measure(store, size, gated)
                total["indexes"] += r["indexes"]
                total["answerable"] += r["answerable"]
                total["hits"] += (r["hit5"] or 0) * r["answerable"]
                total["unanswerable"] += r["unanswerable"]
                total["injected"] += (r["injected"] or 0) * r["unanswerable"]
                total["off_topic"] += r["off_topic"]
                total["off_injected"] += (r["off_injected"] or 0) * r["off_topic"]
            rows.append({"size": size, "min_score": "scaled" if gated else "raw", "indexes": total["indexes"],
                         "answerable": total["answerable"], "hit5": round(total["hits"] / total["answerable"], 3),
                         "unanswerable": total["unanswerable"],
                         "injected": round(total["injected"] / total["unanswerable"], 3),
                         "off_topic": total["off_topic"],
                         "off_injected": round(total["off_injected"] / total["off_topic"], 3)})
    totals: dict[str, list[int]] = {}
    for store in stores:
        for key, (yes, of) in beside(store, 2 if args.smoke else None).items():
            totals.setdefault(key, [0, 0])
            totals[key][0] += yes
            totals[key][1] += of
    merged = {key: round(yes / of, 3) if of else None for key, (yes, of) in totals.items()}
    merged["policies_questions"], merged["other_questions"] = totals["hit"][1], totals["stray"][1]
    if args.json:
        print(json.dumps({"small": rows, "beside": merged}, indent=2))
    else:
        print_report(stores, rows, merged)
    alone = next(r for r in rows if r["size"] == 1 and r["min_score"] == "scaled")
    did_work("answerable messages a one-concept index answered (scaled min_score)",
             round(alone["hit5"] * alone["answerable"]), alone["answerable"], as_json=args.json)
    return 0


def print_report(stores: list[dict], rows: list[dict], merged: dict) -> None:
    print(f"stores: {', '.join(s['store'] for s in stores)}; select() with top_k 5, min_score 1.0, no vocabulary\n")
    print(f"{'concepts':>8} {'min_score':>9} {'indexes':>7} {'answerable':>10} {'hit@5':>6} {'unanswerable':>12} "
          f"{'injected':>8} {'off-topic':>9} {'injected':>8}")
    for r in rows:
        print(f"{r['size']:>8} {r['min_score']:>9} {r['indexes']:>7} {r['answerable']:>10} {r['hit5']:>6.3f} "
              f"{r['unanswerable']:>12} {r['injected'] * 100:>7.1f}% {r['off_topic']:>9} "
              f"{r['off_injected'] * 100:>7.1f}%")
    print(f"\none policy as the tenant's one shared concept, beside the agent's other concepts "
          f"({merged['policies_questions']} of its questions, {merged['other_questions']} others)")
    print(f"{'':<32} {'as its own':>10} {'shared, raw':>11} {'shared':>8}")
    print(f"{'its questions: hit@5':<32} {merged['hit_own']:>10.3f} {merged['hit_raw']:>11.3f} {merged['hit']:>8.3f}")
    print(f"{'other questions: it injected':<32} {merged['stray_own'] * 100:>9.1f}% "
          f"{merged['stray_raw'] * 100:>10.1f}% {merged['stray'] * 100:>7.1f}%")
    print(f"{'other questions: hit@5':<32} {merged['others_own']:>10.3f} {'':>11} {merged['others']:>8.3f}")


if __name__ == "__main__":
    sys.exit(main())
