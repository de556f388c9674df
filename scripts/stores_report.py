#!/usr/bin/env python3
"""Recall on the six labelled stores that are not furniture (tests/data/stores/, issue 24),
each store run through the real RetrieveFunction handler, side by side with plain term overlap
(seed 000's scan) on the same messages in the same run.

    .venv/bin/python scripts/stores_report.py [--store NAME ...] [--heldout] [--misses] [--json]

How a store is run, as the engine and the deployed function would see it:

- moto's server starts in this process on 127.0.0.1 (knowledge_dev.local_aws, as the tests and
  the local stack start it), with a versioned knowledge bucket and an event bus on it;
- each store is one agent of its own tenant (tenant = the store's name, agent `store-support`):
  its `knowledge.yaml` (`retrieve: true`, `top_k: 5`, the default `min_score`) and its concepts are
  written through ConceptStore, the journal included, as the studio writes them. A concept whose
  `type` is `policy` is written with `provenance: policy` (the stores' written rules, which only a
  human may mark so); every other type with `provenance: observed`; all at confidence 0.6, one
  source, one occurrence, the first `updated_at` sixty days before the run and each next an hour
  after the one before in the file's order
  (confidence does not rank; recency breaks ties, as in scripts/retrieval_report.py);
- functions/retrieve/app.py is imported once, as a cold start does (knowledge_dev.handlers, with
  the template's literal settings), and serves every store, as one container serves many agents.
  It reads `KNOWLEDGE_BUCKET` and `EVENT_BUS_NAME`; metrics and info logs are switched off
  (`POWERTOOLS_METRICS_DISABLED`, `POWERTOOLS_LOG_LEVEL=WARNING`) so they do not mix into the
  table; the fetch budget and the refresh window are the defaults; the context's time left is
  the template's timeout;
- every test message is one retrieve call, `{tenant, agent, session_id, message}`
  (docs/retrieval.md, events/retrieve.json), in a session of its own.

What is counted, per store and per slice (`concept-words`, `taught`, `never-taught`, `off-topic`,
`wordshare`; `english` = the tests in English; `overall` = every on-topic test, and the off-topic
and wordshare tests for the last column):

- hit@5 and MRR over the answer's ranked concepts (`linked: false`, at most `top_k`; a concept
  reached only through a `[[link]]` is not ranked and does not count as a hit — the JSON says how
  many misses the block reached that way);
- silent: the on-topic messages whose answer injects nothing (an empty block);
- off-topic injecting: the off-topic and wordshare messages whose answer injects anything.

Plain overlap ranks the same concepts with knowledge.recall.index.OverlapScan as
scripts/retrieval_report.py builds it: any shared word is a hit, so it injects whenever a word is
shared. The final "all stores" rows pool every message of the stores reported.

The handler's figures are the same from run to run: the index weighs lengths against an average
taken on a fixed grid, so its scores do not depend on the order the cold start's parallel fetch
delivers the concepts.

`tests/data/stores/heldout/beleza.json` is held out: `--heldout` adds it, and it is to be read
once, at the end of the recall work of issue 24, never while tuning.

Only day one is measured today. The "after learning" phase — each store's `traffic` sent through
retrieve → load_knowledge → turn-complete → extraction → consolidation, then the tests again —
plugs in at `learn_from_traffic()`, which does nothing yet.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from knowledge.format.concept import Concept
from knowledge.recall.index import OverlapScan

ROOT = Path(__file__).resolve().parents[1]
STORES = ROOT / "tests" / "data" / "stores"
HELDOUT = {"beleza": STORES / "heldout" / "beleza.json"}
AGENT = "store-support"
TOP_K = 5
ON_TOPIC = ("concept-words", "taught", "never-taught")
OFF_TOPIC = ("off-topic", "wordshare")
SLICES = (*ON_TOPIC, *OFF_TOPIC, "english", "overall")
CONFIG = f"knowledge:\n  retrieve: true\n  top_k: {TOP_K}\n"
# A ranker answers a message with (the ranked names, whether anything was injected, what the block
# reached through links only).
Answer = tuple[list[str], bool, list[str]]
Ranker = Callable[[str, str, str], Answer]  # (store, test id, message) -> Answer


def store_paths(heldout: bool = False) -> dict[str, Path]:
    paths = {path.stem: path for path in sorted(STORES.glob("*.json"))}
    return {**paths, **HELDOUT} if heldout else paths


def load_store(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def concepts_of(store: dict) -> list[Concept]:
    """The store's concepts as they are written to its agent (provenance: see the module's doc)."""
    # Sixty days before the run (to the hour), not a fixed date: the agent's default stale rule
    # (180 days) would otherwise take every concept out of recall half a year after that date.
    start = datetime.now(UTC).replace(minute=0, second=0, microsecond=0) - timedelta(days=60)
    return [Concept(name=c["name"], description=c["description"], type=c["type"],
                    provenance="policy" if c["type"] == "policy" else "observed", confidence=0.6,
                    sources=("sess_seed",), occurrences=1, created_at=start,
                    updated_at=start + timedelta(hours=i), body=c["body"])
            for i, c in enumerate(store["concepts"])]


def tenant_of(name: str) -> str:
    return name.lower().replace("_", "-")


# ------------------------------------------------------------------ the local AWS and the handler
@dataclass
class LocalRetrieve:
    """RetrieveFunction's handler on the local AWS, with the stores' agents written."""

    handler: Any
    store: Any  # ConceptStore on the knowledge bucket
    bucket: str
    timeout_ms: int

    def call(self, tenant: str, session_id: str, message: str) -> dict:
        from knowledge_dev.poller import LambdaContext

        event = {"tenant": tenant, "agent": AGENT, "session_id": session_id, "message": message}
        answer = self.handler.lambda_handler(event, LambdaContext("retrieve", timeout_ms=self.timeout_ms))
        if "error" in answer:
            raise RuntimeError(f"retrieve refused {session_id}: {answer['error']}")
        return answer


@contextlib.contextmanager
def local_retrieve(endpoint: str | None = None) -> Iterator[LocalRetrieve]:
    """moto's server (started here unless `endpoint` names one already running: the tests'), a
    versioned knowledge bucket and an event bus on it, and the handler imported as a cold start
    would, with its settings; the environment is restored afterwards."""
    with contextlib.ExitStack() as stack:
        if endpoint is None:
            from knowledge_dev.local_aws import moto_server

            endpoint = stack.enter_context(moto_server("stores-report"))
        import boto3

        from knowledge.store.concepts import ConceptStore
        from knowledge_dev.handlers import function_timeout_ms, handler_environment, load_handler

        s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
        events = boto3.client("events", endpoint_url=endpoint, region_name="us-east-1")
        run = uuid.uuid4().hex[:10]
        bucket, bus = f"stores-knowledge-{run}", f"stores-bus-{run}"
        s3.create_bucket(Bucket=bucket)
        s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
        events.create_event_bus(Name=bus)
        with handler_environment(KNOWLEDGE_BUCKET=bucket, EVENT_BUS_NAME=bus, POWERTOOLS_METRICS_DISABLED="true",
                                 POWERTOOLS_LOG_LEVEL="WARNING"):
            handler = load_handler("retrieve", module_name=f"stores_report_retrieve_{run}")
            yield LocalRetrieve(handler, ConceptStore(s3, bucket), bucket, function_timeout_ms("retrieve"))


def write_store(local: LocalRetrieve, name: str, store: dict) -> list[Concept]:
    """The store's knowledge.yaml and concepts, written to its own tenant's agent."""
    tenant = tenant_of(name)
    local.store.put_config(tenant, AGENT, CONFIG, actor="operator:stores-report")
    concepts = concepts_of(store)
    for concept in concepts:
        local.store.create(tenant, AGENT, concept, actor="operator:stores-report")
    return concepts


def learn_from_traffic(local: LocalRetrieve, name: str, store: dict) -> bool:
    """The "after learning" phase's place, not built: it will send the store's `traffic` as the
    engine would — each customer message a retrieve call, the `load_knowledge` calls the block
    leads to, then the turn-complete message through extraction and consolidation (the scripted
    model answering with the session's `about`) — so that the tests are asked again of what the
    agent learned. Returns whether anything was learned; today nothing is, and the report has
    its day-one phase only."""
    return False


def handler_ranker(local: LocalRetrieve) -> Ranker:
    def rank(store: str, test_id: str, message: str) -> Answer:
        answer = local.call(tenant_of(store), f"eval-{tenant_of(store)}-{test_id}", message)
        ranked = [c["name"] for c in answer["concepts"] if not c["linked"]]
        linked = [c["name"] for c in answer["concepts"] if c["linked"]]
        return ranked, bool(answer["block"]), linked
    return rank


def overlap_ranker(concepts: dict[str, list[Concept]]) -> Ranker:
    scans = {name: OverlapScan(items) for name, items in concepts.items()}

    def rank(store: str, test_id: str, message: str) -> Answer:
        ranked = [name for name, _ in scans[store].search(message, TOP_K)]
        return ranked, bool(ranked), []
    return rank


# ------------------------------------------------------------------ counting
def answers_of(rank: Ranker, tests: dict[str, list[dict]]) -> list[dict]:
    """Every test of every store, with what the ranker answered."""
    out = []
    for store, items in tests.items():
        for test in items:
            ranked, injected, linked = rank(store, test["id"], test["message"])
            out.append({**test, "store": store, "ranked": ranked, "injected": injected, "linked": linked})
    return out


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


def evaluate(stores: dict[str, dict], endpoint: str | None = None) -> dict:
    """Each store through the handler and through plain overlap, per slice; `stores` maps a
    store's name to its data (a file of tests/data/stores/ as loaded). With more than one store,
    an "all stores" entry pools every message."""
    started = time.monotonic()
    tests = {name: store["tests"] for name, store in stores.items()}
    phases: dict[str, dict] = {}
    with local_retrieve(endpoint) as local:
        concepts = {name: write_store(local, name, store) for name, store in stores.items()}
        written = time.monotonic()
        rankers = {"index": handler_ranker(local), "overlap": overlap_ranker(concepts)}
        phases["day one"] = _phase(rankers, tests)
        learned = [learn_from_traffic(local, name, store) for name, store in stores.items()]  # every store
        if any(learned):
            phases["after learning"] = _phase(rankers, tests)
    return {"top_k": TOP_K, "agent": AGENT,
            "stores": {name: {"concepts": len(concepts[name]), "tests": len(tests[name])} for name in stores},
            "phases": phases,
            "seconds": {"setup": written - started, "total": time.monotonic() - started}}


def _phase(rankers: dict[str, Ranker], tests: dict[str, list[dict]]) -> dict:
    answered = {ranker: answers_of(rank, tests) for ranker, rank in rankers.items()}
    out = {name: {ranker: by_slice([r for r in rows if r["store"] == name]) for ranker, rows in answered.items()}
           for name in tests}
    if len(tests) > 1:
        out["all stores"] = {ranker: by_slice(rows) for ranker, rows in answered.items()}
    return out


# ------------------------------------------------------------------ printing
def _num(row: dict, key: str, percent: bool = False) -> str:
    if key not in row:
        return "-"
    return f"{row[key] * 100:.1f}%" if percent else f"{row[key]:.3f}"


def print_report(report: dict, misses: bool) -> None:
    stores = report["stores"]
    listed = ", ".join(f"{name}: {s['concepts']} concepts, {s['tests']} tests" for name, s in stores.items())
    print(f"{len(stores)} stores ({listed}); top {TOP_K}; through RetrieveFunction's handler on moto, "
          "and plain overlap on the same messages")
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
        print(f"\n[{phase}] summary, overall: index / plain overlap")
        print(f"  {'store':<12} {'hit@5':>13} {'MRR':>13} {'silent':>15} {'off-topic injecting':>21}")
        for label, rankers in results.items():
            i, o = rankers["index"]["overall"], rankers["overlap"]["overall"]
            print(f"  {label:<12} {_num(i, 'hit_at_5'):>5} / {_num(o, 'hit_at_5'):<5} {_num(i, 'mrr'):>5} / {_num(o, 'mrr'):<5} "
                  f"{_num(i, 'silent', True):>6} / {_num(o, 'silent', True):<6} "
                  f"{_num(i, 'off_topic_injecting', True):>10} / {_num(o, 'off_topic_injecting', True):<8}")
        if misses:
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
    print(f"\n{seconds['total']:.1f} s in all ({seconds['setup']:.1f} s starting moto and writing the stores)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", action="append", metavar="NAME",
                        help="report only this store (repeatable); every store not held out by default")
    parser.add_argument("--heldout", action="store_true",
                        help="include the held-out store (heldout/beleza.json): read once, at the end of the recall work")
    parser.add_argument("--misses", action="store_true", help="print the index's misses and off-topic injections")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    paths = store_paths(args.heldout)
    unknown = [name for name in args.store or [] if name not in paths]
    if unknown:
        held = " (held out: add --heldout)" if set(unknown) & set(HELDOUT) else ""
        parser.error(f"unknown store {', '.join(unknown)}{held}; stores: {', '.join(paths)}")
    chosen = {name: load_store(paths[name]) for name in (args.store or paths)}
    report = evaluate(chosen)
    if args.json:
        print(json.dumps(report, indent=1, ensure_ascii=False))
    else:
        print_report(report, args.misses)
    return 0


if __name__ == "__main__":
    sys.exit(main())
