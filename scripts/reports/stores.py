#!/usr/bin/env python3
"""Recall on the labelled stores that are not furniture (tests/data/stores/, issues 24 and 40),
each store run through the real RetrieveFunction handler, on day one and after its traffic, without
and with the words a model proposes for its concepts; plain term overlap (seed 000's scan) on the
same messages in the same run.

    ./run script reports.stores [--store NAME ...] [--heldout | --aside] [--misses] [--detail]
        [--learn both|all|none|loaded|sighting] [--no-model-words] [--jobs N]
        [--vocabulary FILE | --starter NAME] [--json] [--smoke]

`--smoke`: one store (academia), day one only, in one process. Every run ends with the on-topic
messages the handler answered with their concept on day one.

`--vocabulary FILE` writes that vocabulary.yaml to every store's agent (through ConceptStore, as
the studio saves one); `--starter varejo-br` the starter for Brazilian retail that ships with the
engine (knowledge/format/vocabularies/). Without either, no agent has a vocabulary, as a new
agent has none: the engine knows only what holds for every store (issue 24).

How a store is run, as the engine and the deployed functions would see it (scripts/lib/labelled_stores.py):

- moto's server starts in the process on 127.0.0.1 (knowledge_dev.local_aws, as the tests and
  the local stack start it), with a versioned knowledge bucket and an event bus on it;
- each store is one agent of its own tenant (the store's name, agent `store-support`; a tenant of
  its own again per phase below): its `knowledge.yaml` (`retrieve: true`, `top_k: 5`, the default
  `min_score`) and its concepts are written through ConceptStore, the journal included, as the
  studio writes them (actor `operator:stores-report`). A concept whose `type` is `policy` is written
  with `provenance: policy` (the stores' written rules, which only a human may mark so); every other
  type with `provenance: observed`; all at confidence 0.6, one source, one occurrence, the first
  `updated_at` sixty days before the run and each next an hour after the one before in the file's
  order (confidence does not rank; recency breaks ties, as in scripts/retrieval_report.py);
- functions/retrieve/app.py is imported once per process, as a cold start does
  (knowledge_dev.handlers, with the template's literal settings), and serves every store, as one
  container serves many agents. It reads `KNOWLEDGE_BUCKET` and `EVENT_BUS_NAME`; metrics and info
  logs are switched off (`POWERTOOLS_METRICS_DISABLED`, `POWERTOOLS_LOG_LEVEL=WARNING`); the fetch
  budget and the refresh window are the defaults; the context's time left is the template's timeout;
- every test message is one retrieve call, `{tenant, agent, session_id, message}`
  (docs/retrieval.md, events/retrieve.json), in a session of its own.

The phases, each a tenant of its own per store:

- **day one**: the concepts as written;
- **day one + model words**: the agent's `learn_from` is `[model]`, and each concept, saved as the
  studio saves it, queues its `words` job (knowledge.learning.policy_review.PolicyReviewQueue), which
  PolicyReviewFunction's handler runs, one record per invocation as its BatchSize is
  (knowledge.learning.model_words.WordProposer: the prompt, the gates, the write). The model is the
  scripted local HTTP model (knowledge_dev.scripted_model, a real server the product's client talks
  to): it answers each words prompt with the phrases of the concept its `name:` line names in
  tests/data/stores/proposals/<store>.json, which a stand-in wrote seeing only that prompt (its
  README). The figures say what such words give, not what a real model would propose. The policy
  reviews the same saves queue are not run (they need a judge, and retire rather than teach).
- **after traffic (both)**: `learn_from: [loaded, sighting]` (docs/contract.md, learned words), and
  the store's `traffic` sent through the real handlers, session by session, turn by turn, as an
  engine would: each customer message is one retrieve call in the session; when the session was
  `about` a concept the block did not rank first, the agent calls load_knowledge for it; the
  turn-complete message (the customer's message, the assistant's answer, `shown`: the names
  retrieve answered and the loads made in the session so far, and `customer_id` when the session
  names its customer) goes through ExtractFunction's handler (as an SQS record), and the sightings
  it sends to the CandidatesQueue through ConsolidateFunction's handler. The sessions run in the
  order of their `day` (moved so that the last ends three days before the run; the file's order
  where a store gives none), each turn a second after the one before. The extraction model is the
  scripted one again, answering a sighting of the concept the session is `about`, quoting the
  assistant: a perfect extractor, no evidence of a real model's quality. The containers refresh
  their index at every call (`KNOWLEDGE_REFRESH_SECONDS=0`), so a word learned in one session is
  known to the next;
- **after traffic (both) + model words**: `learn_from: [loaded, sighting, model]`, the model's words
  first (the operator saved the concepts before the traffic came), then the same traffic.

`--learn all` adds the signals alone (`loaded`, `sighting`) beside `both`; `--learn none` runs day
one only; `--no-model-words` leaves out the model-words phases. `--jobs N` (2 by default) hands the
stores to N processes, each with its own moto server and handlers: the figures are the same, each
store being a tenant of its own.

What is counted, per store and per slice (`concept-words`, `taught`, `never-taught`, `off-topic`,
`wordshare`; `english` = the tests in English; `overall` = every on-topic test, and the off-topic
and wordshare tests for the injecting column; no set marks typos, so there is no typos slice):

- hit@5 and MRR over the answer's ranked concepts (`linked: false`, at most `top_k`; a concept
  reached only through a `[[link]]` is not ranked and does not count as a hit — the JSON says how
  many misses the block reached that way);
- silent: the on-topic messages whose answer injects nothing (an empty block);
- off-topic injecting: the off-topic and wordshare messages whose answer injects anything.

Plain overlap ranks the same concepts with knowledge.recall.overlap.OverlapScan as
scripts/retrieval_report.py builds it: any shared word is a hit, so it injects whenever a word is
shared; it reads no learned word, so it is counted on day one only. The "all stores" rows pool
every message of the stores reported.

The handler's figures are the same from run to run, but for exact ties: the index weighs lengths
against an average taken on a fixed grid, so its scores do not depend on the order the cold start's
parallel fetch delivers the concepts; two concepts scoring exactly alike are ordered by the last bit
of float sums that order decides (seen with model words: one test moves, docs/evaluation.md).

`tests/data/stores/heldout/` is held out (a beauty shop, read once at the end of issue 24's recall
work; a bookstore, to be read once at the end of issue 40's): `--heldout` adds them; never while tuning.
`tests/data/stores/heldout/aside/` holds a third of the messages written later for the tuning stores
(their more-messages round, issue 40): `--aside` answers those instead of the stores' own tests, on the
same concepts and traffic; read once, at the end.
"""

from __future__ import annotations

import json
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from functools import partial
from multiprocessing import get_context
from pathlib import Path
from typing import Any

from scripts.lib.harness import ROOT, did_work, parser as script_parser
from scripts.lib.labelled_stores import (
    AGENT,
    TOP_K,
    VARIANTS,
    Run,
    concepts_of,
    phase_of,
    run_stores,
    tenant_of,
)

STORES = ROOT / "tests" / "data" / "stores"
PROPOSALS = STORES / "proposals"
HELDOUT = {"beleza": STORES / "heldout" / "beleza.json", "livraria": STORES / "heldout" / "livraria.json"}
ASIDE = STORES / "heldout" / "aside"
ON_TOPIC = ("concept-words", "taught", "never-taught")
OFF_TOPIC = ("off-topic", "wordshare")
SLICES = (*ON_TOPIC, *OFF_TOPIC, "english", "overall")
__all__ = ["AGENT", "concepts_of", "evaluate", "load_store", "store_paths", "tenant_of"]


def store_paths(heldout: bool = False) -> dict[str, Path]:
    paths = {path.stem: path for path in sorted(STORES.glob("*.json"))}
    return {**paths, **HELDOUT} if heldout else paths


def load_store(path: Path, aside: bool = False) -> dict:
    """A store; `aside`: with the messages held aside for it (heldout/aside/) in place of its tests."""
    store = json.loads(path.read_text(encoding="utf-8"))
    if aside:
        held = ASIDE / path.name
        if not held.exists():
            raise SystemExit(f"no messages are held aside for {path.stem} ({held})")
        store["tests"] = json.loads(held.read_text(encoding="utf-8"))["tests"]
    return store


def load_proposals(names: list[str]) -> dict[str, dict[str, list[str]]]:
    """The stand-in's phrases per concept, per store (tests/data/stores/proposals/)."""
    return {name: json.loads((PROPOSALS / f"{name}.json").read_text(encoding="utf-8")) for name in names}


# ------------------------------------------------------------------ counting
def quality(rows: list[dict]) -> dict:
    """hit@5, MRR, silent over on-topic rows; off-topic injecting over off-topic rows."""
    on = [r for r in rows if r["slice"] in ON_TOPIC]
    off = [r for r in rows if r["slice"] in OFF_TOPIC]
    out: dict[str, Any] = {}
    if on:
        hits, reciprocal, silent, misses, linked_only = 0, 0.0, 0, [], 0
        for row in on:
            positions = [row["ranked"].index(name) for name in row["expected"] if name in row["ranked"]]
            silent += not row["injected"]
            if positions:
                hits += 1
                reciprocal += 1 / (min(positions) + 1)
                continue
            linked_only += any(name in row["linked"] for name in row["expected"])
            misses.append({"store": row["store"], "id": row["id"], "slice": row["slice"],
                           "message": row["message"], "expected": row["expected"], "got": row["ranked"]})
        out.update(n=len(on), hit_at_5=hits / len(on), mrr=reciprocal / len(on), silent=silent / len(on),
                   silent_n=silent, linked_only=linked_only, misses=misses)
    if off:
        injected = [{"store": r["store"], "id": r["id"], "slice": r["slice"], "message": r["message"],
                     "got": r["ranked"] or r["linked"]} for r in off if r["injected"]]
        out.update(n_off_topic=len(off), off_topic_injecting=len(injected) / len(off), injected=injected)
    return out


def by_slice(rows: list[dict]) -> dict:
    result = {slice_: quality([r for r in rows if r["slice"] == slice_]) for slice_ in (*ON_TOPIC, *OFF_TOPIC)}
    result["english"] = quality([r for r in rows if r.get("language") == "en"])
    result["overall"] = quality(rows)
    return result


def _chunks(stores: dict[str, dict], jobs: int) -> list[dict[str, dict]]:
    """The stores dealt to `jobs` processes, the busiest first, so that each gets as many turns."""
    chunks: list[dict[str, dict]] = [{} for _ in range(max(1, min(jobs, len(stores))))]
    loads = [0] * len(chunks)
    for name in sorted(stores, key=lambda n: -sum(len(s["turns"]) for s in stores[n].get("traffic", []))):
        k = loads.index(min(loads))
        chunks[k][name] = stores[name]
        loads[k] += sum(len(s["turns"]) for s in stores[name].get("traffic", [])) + 1
    return chunks


def evaluate(stores: dict[str, dict], endpoint: str | None = None, variants: tuple[str, ...] = (),
             vocabulary: str | None = None, proposals: dict[str, dict] | None = None, jobs: int = 1) -> dict:
    """Each store through the handler and through plain overlap, per slice; `stores` maps a store's
    name to its data (a file of tests/data/stores/ as loaded). With more than one store, an "all
    stores" entry pools every message. Each of `variants` (VARIANTS' names) adds an "after traffic"
    phase; `proposals` (store -> concept -> phrases) the model-words phases beside day one and each
    variant. `vocabulary`: every agent's vocabulary.yaml text. `jobs`: processes (without `endpoint`)."""
    started = time.monotonic()
    chunks = _chunks(stores, jobs) if endpoint is None else [stores]
    run = partial(run_stores, variants=variants, vocabulary=vocabulary, proposals=proposals)
    if len(chunks) > 1:
        with ProcessPoolExecutor(len(chunks), mp_context=get_context("spawn")) as pool:
            runs = list(pool.map(run, chunks))
    else:
        runs = [run(stores, endpoint=endpoint)]
    merged = Run()
    for part in runs:
        for phase, rankers in part.answers.items():
            for ranker, rows in rankers.items():
                merged.answers.setdefault(phase, {}).setdefault(ranker, []).extend(rows)
        for phase, learned in part.learning.items():
            merged.learning.setdefault(phase, {}).update(learned)
        merged.words.update(part.words)
        merged.concepts.update(part.concepts)
    order = list(stores)
    phases = {}
    every = [phase_of(None, False), phase_of(None, True), *(phase_of(v, w) for v in variants for w in (False, True))]
    for phase in every:
        if phase in merged.answers:
            rankers = {r: sorted(rows, key=lambda row: order.index(row["store"]))
                       for r, rows in merged.answers[phase].items()}
            phases[phase] = _phase(rankers, order)
    return {"top_k": TOP_K, "agent": AGENT,
            "stores": {name: {"concepts": merged.concepts[name], "tests": len(stores[name]["tests"])}
                       for name in order},
            "phases": phases, "summary": summary(phases),
            "learning": {phase: {n: merged.learning[phase][n] for n in order} for phase in merged.learning},
            "model_words": {n: merged.words[n] for n in order if n in merged.words},
            "seconds": {"setup": max((p.setup_seconds for p in runs), default=0.0),
                        "total": time.monotonic() - started}, "processes": len(chunks)}


def _phase(answered: dict[str, list[dict]], stores: list[str]) -> dict:
    out = {name: {ranker: by_slice([r for r in rows if r["store"] == name]) for ranker, rows in answered.items()}
           for name in stores}
    if len(stores) > 1:
        out["all stores"] = {ranker: by_slice(rows) for ranker, rows in answered.items()}
    return out


def summary(phases: dict) -> dict:
    """Per store (and all stores), per phase, the handler's figures the docs keep: overall hit@5 and
    silent, off-topic and wordshare injecting."""
    out: dict[str, dict] = {}
    for phase, results in phases.items():
        for label, rankers in results.items():
            rows = rankers["index"]
            out.setdefault(label, {})[phase] = {
                "hit_at_5": rows["overall"].get("hit_at_5"), "silent": rows["overall"].get("silent"),
                "off_topic": rows["off-topic"].get("off_topic_injecting"),
                "wordshare": rows["wordshare"].get("off_topic_injecting")}
    return out


# ------------------------------------------------------------------ printing
def _num(row: dict, key: str, percent: bool = False) -> str:
    if row.get(key) is None:
        return "-"
    return f"{row[key] * 100:.1f}%" if percent else f"{row[key]:.3f}"


def print_detail(report: dict) -> None:
    """Every phase, every store, every slice: the handler beside plain overlap where it is counted."""
    for phase, results in report["phases"].items():
        for label, rankers in results.items():
            print(f"\n[{phase}] {label}")
            print(f"  {'slice':<14} {'ranker':<8} {'n':>4} {'hit@5':>7} {'MRR':>7} {'silent':>7} "
                  f"{'n':>5} {'off-topic injecting':>20}")
            for slice_ in SLICES:
                for name, rows in rankers.items():
                    row = rows[slice_]
                    print(f"  {slice_:<14} {name:<8} {row.get('n', '-'):>4} {_num(row, 'hit_at_5'):>7} "
                          f"{_num(row, 'mrr'):>7} {_num(row, 'silent', True):>7} {row.get('n_off_topic', '-'):>5} "
                          f"{_num(row, 'off_topic_injecting', True):>20}")


def print_slices(report: dict) -> None:
    """Per store, each slice's figures in every phase, plain overlap's day one beside."""
    phases = report["phases"]
    columns = list(phases)
    print("\n[per slice] through the handler in each phase; plain overlap (day one) first")
    print("  " + " | ".join(f"{i}: {phase}" for i, phase in enumerate(["overlap", *columns])))
    rows = [(s, "hit_at_5") for s in ON_TOPIC] + [(s, "silent") for s in ON_TOPIC] + [
        ("english", "hit_at_5"), ("english", "silent"), ("english", "off_topic_injecting"),
        ("overall", "hit_at_5"), ("overall", "mrr"), ("overall", "silent")] + [
        (s, "off_topic_injecting") for s in OFF_TOPIC] + [("overall", "off_topic_injecting")]
    names = {"hit_at_5": "hit@5", "mrr": "MRR", "silent": "silent", "off_topic_injecting": "injecting"}
    for label in phases["day one"]:
        print(f"\n  {label}")
        print(f"  {'slice':<14} {'':<9} {'n':>4} " + " ".join(f"{i:>8}" for i in range(len(columns) + 1)))
        for slice_, key in rows:
            cells = [phases["day one"][label]["overlap"][slice_]] + [phases[p][label]["index"][slice_] for p in columns]
            n = cells[0].get("n_off_topic" if key == "off_topic_injecting" else "n")
            if n is None:
                continue
            print(f"  {slice_:<14} {names[key]:<9} {n:>4} "
                  + " ".join(f"{_num(c, key, key in ('silent', 'off_topic_injecting')):>8}" for c in cells))


def print_summary(report: dict) -> None:
    """The figures the docs keep: per store, per phase, overall hit@5 / silent / off-topic / wordshare."""
    phases = list(report["phases"])
    print("\n[summary] through the handler: overall hit@5, on-topic silent, off-topic injecting, wordshare injecting")
    print(f"  {'store':<12} " + " ".join(f"{p:<29}"[:29] for p in phases))
    for label, cells in report["summary"].items():
        line = []
        for phase in phases:
            c = cells[phase]
            line.append(f"{_num(c, 'hit_at_5'):>5} {_num(c, 'silent', True):>6} {_num(c, 'off_topic', True):>6} "
                        f"{_num(c, 'wordshare', True):>6}  ")
        print(f"  {label:<12} " + " ".join(line))


def print_learning(report: dict) -> None:
    for name, info in report["model_words"].items():
        print(f"[model words] {name}: {info['jobs']} words jobs, {info['proposed']} phrases answered, "
              f"{info['kept']} kept on {len(info['words'])} concepts"
              + (f", {info['unknown']} prompts naming no concept of the proposals" if info["unknown"] else "")
              + (f", {info['redelivered']} delivered again after the function failed them" if info["redelivered"] else ""))
    for phase, stores in report["learning"].items():
        print(f"[{phase}] words the traffic taught, per store: " + ", ".join(
            f"{name} {sum(len(w) for w in info['learned'].values())} ({info['turns']} turns, {info['loads']} loads)"
            for name, info in stores.items()))


def print_report(report: dict, misses: bool, detail: bool) -> None:
    stores = report["stores"]
    listed = ", ".join(f"{name}: {s['concepts']} concepts, {s['tests']} tests" for name, s in stores.items())
    print(f"{len(stores)} stores ({listed}); top {TOP_K}; through RetrieveFunction's handler on moto, "
          "and plain overlap on the same messages")
    if detail:
        print_detail(report)
    print()
    print_learning(report)
    print_slices(report)
    print_summary(report)
    if misses:
        for phase, results in report["phases"].items():
            for label, rankers in results.items():
                if label == "all stores":
                    continue
                row = rankers["index"]["overall"]
                for miss in row.get("misses", []):
                    print(f"\n  [{phase}/{label}/index] missed ({miss['slice']}): {miss['message']!r}\n"
                          f"    expected {miss['expected']}\n    got      {miss['got']}")
                for item in row.get("injected", []):
                    print(f"\n  [{phase}/{label}/index] {item['slice']} injected: {item['message']!r} -> {item['got']}")
    seconds = report["seconds"]
    print(f"\n{seconds['total']:.1f} s in all, {report['processes']} process(es) "
          f"({seconds['setup']:.1f} s starting moto, writing the stores and proposing their words)")


def main() -> int:
    parser = script_parser(__doc__)
    parser.add_argument("--store", action="append", metavar="NAME",
                        help="report only this store (repeatable); every store not held out by default")
    parser.add_argument("--heldout", action="store_true",
                        help="include the held-out stores (heldout/): each read once, at the end of its round")
    parser.add_argument("--aside", action="store_true",
                        help="answer the tuning stores' messages held aside (heldout/aside/), read once at the end")
    parser.add_argument("--misses", action="store_true", help="print the index's misses and off-topic injections")
    parser.add_argument("--detail", action="store_true", help="every phase's full table, MRR and overlap included")
    given = parser.add_mutually_exclusive_group()
    given.add_argument("--vocabulary", metavar="FILE", help="a vocabulary.yaml every store's agent is given")
    given.add_argument("--starter", metavar="NAME", help="a shipped starter vocabulary every store's agent copies")
    parser.add_argument("--learn", choices=("both", "all", "none", *VARIANTS), default="both",
                        help="the after-traffic phases: both signals (the default), every signal alone and both "
                             "(all), none, or one signal")
    parser.add_argument("--no-model-words", action="store_true", help="leave out the phases with the model's words")
    parser.add_argument("--jobs", type=int, default=2, help="processes the stores are dealt to (default 2)")
    args = parser.parse_args()
    if args.smoke:
        args.store, args.learn, args.no_model_words, args.jobs = ["academia"], "none", True, 1
    if args.jobs < 1:
        parser.error("--jobs must be 1 or more")
    vocabulary = None
    if args.vocabulary:
        vocabulary = Path(args.vocabulary).read_text(encoding="utf-8")
    elif args.starter:
        from knowledge.format.vocabulary import starter_text

        vocabulary = starter_text(args.starter)
    paths = store_paths(args.heldout)
    unknown = [name for name in args.store or [] if name not in paths]
    if unknown:
        held = " (held out: add --heldout)" if set(unknown) & set(HELDOUT) else ""
        parser.error(f"unknown store {', '.join(unknown)}{held}; stores: {', '.join(paths)}")
    if args.aside and args.heldout:
        parser.error("--aside answers the tuning stores' held-aside messages; the held-out stores have none")
    chosen = {name: load_store(paths[name], args.aside) for name in (args.store or paths)}
    variants = tuple(VARIANTS) if args.learn == "all" else () if args.learn == "none" else (args.learn,)
    proposals = None if args.no_model_words else load_proposals(list(chosen))
    report = evaluate(chosen, variants=variants, vocabulary=vocabulary, proposals=proposals, jobs=args.jobs)
    if args.json:
        print(json.dumps(report, indent=1, ensure_ascii=False))
    else:
        print_report(report, args.misses, args.detail)
    day_one = [rankers["index"]["overall"] for label, rankers in report["phases"]["day one"].items()
               if label != "all stores"]
    did_work("on-topic messages the handler answered with their concept on day one",
             sum(round(r["hit_at_5"] * r["n"]) for r in day_one), sum(r["n"] for r in day_one), as_json=args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
