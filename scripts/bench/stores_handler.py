#!/usr/bin/env python3
"""RetrieveFunction's handler timed on real store texts and real customer messages (issue 40, Speed).

    ./run script bench.stores_handler [--sizes 1000 5000 20000] [--rounds 5] [--json] [--smoke]

The corpus is the concepts of the tuning stores (tests/data/stores/*.json; never heldout/),
replicated to each size: replica r of a store's concept is named `<name>-<store>-r<r>` and its description ends
with "(réplica r)", so no two concepts are the same text. Each concept carries about 24 learned
words, as an agent holds them after the model and its traffic taught it:

- origin `model`: the stand-in's phrases for that concept (tests/data/stores/proposals/<store>.json),
  through `knowledge.learning.model_words.gate_words` as the words job keeps them (at most 8);
- origin `loaded`, up to 24 in all: words the store's customers wrote in their traffic (its
  sessions about that concept first, then the store's other sessions, a different window of them
  per concept and replica), never one the concept's text says, a stopword or personal data.

The messages are every test message of those stores (all slices, English included). Per size, on
moto's server: `knowledge.yaml` (retrieve on, top_k 5) and the concepts written through the store,
RetrieveFunction's handler imported as a cold start does, one pass over the messages to warm it
(the first call loads the whole agent), then `--rounds` timed passes. Printed per size: the
handler's p50 (the minimum of the rounds' medians, as bench.knowledge_index --speed)
and p95, the S3 requests per warm call (0 expected: a warm container answers from memory), how
many answers injected something (none fails the run: it would time a handler that answers
nothing), `Index.relevant` alone in this process on the same corpus, and bm25s (a bench-only
comparison, never a runtime dependency: pyproject's `bench` extra; skipped with a message when it
is not installed) on the same texts and messages in the same run: tokenize + top 5 per message, one
message at a time as a turn asks. Targets: handler p50 <= 0.5 ms at 5,000 and <= bm25s's p50; Index.relevant p50 <= 0.1
ms at 1,000; 0 S3 requests per warm call.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import statistics
import sys
import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Callable, Iterator, Optional

from scripts.lib.harness import ROOT, NoWorkDone, did_work, moto, parser, percentile, timed

STORES = ROOT / "tests" / "data" / "stores"
TENANT, AGENT = "default", "store-support"
TOP_K = 5
CONFIG = f"knowledge:\n  retrieve: true\n  top_k: {TOP_K}\n"
WORDS = 24  # learned words per concept (LEARNED_MAX)
_WORD = re.compile(r"[^\W\d_]+(?:-[^\W\d_]+)*")


class NothingInjected(NoWorkDone):
    """No timed answer injected anything: the bench would time a handler that answers nothing."""


# ------------------------------------------------------------------ the corpus
@dataclass
class Corpus:
    bases: list[tuple[str, dict]]  # (store, concept as written in its file), in file order
    proposals: dict[str, dict[str, list[str]]]  # store -> concept name -> the stand-in's phrases
    traffic_words: dict[tuple[str, str], list[str]]  # (store, concept) -> customer words, most said first
    store_words: dict[str, list[str]]  # store -> customer words of its whole traffic, most said first
    messages: list[str]  # every test message of the stores


def load_corpus(stores_dir: Path = STORES) -> Corpus:
    """The tuning stores only: the files directly in `stores_dir` (heldout/ is a folder below it)."""
    bases, proposals, traffic, store_words, messages = [], {}, {}, {}, []
    for path in sorted(stores_dir.glob("*.json")):
        store = json.loads(path.read_text(encoding="utf-8"))
        name = path.stem
        bases += [(name, c) for c in store["concepts"]]
        proposals[name] = json.loads((stores_dir / "proposals" / f"{name}.json").read_text(encoding="utf-8"))
        per_concept: dict[str, Counter] = {c["name"]: Counter() for c in store["concepts"]}
        whole: Counter = Counter()
        for session in store["traffic"]:
            # Once each, in the order said (not a set: its order, and so the ties below, would follow the hash seed).
            said = list(dict.fromkeys(w.lower() for turn in session["turns"] for w in _WORD.findall(turn["customer"])))
            whole.update(said)  # sessions that said it, not times
            for about in session["about"]:
                per_concept.setdefault(about, Counter()).update(said)
        for concept, counts in per_concept.items():
            traffic[(name, concept)] = [w for w, _ in counts.most_common()]
        store_words[name] = [w for w, _ in whole.most_common()]
        messages += [t["message"] for t in store["tests"]]
    if not bases:
        raise SystemExit(f"no store in {stores_dir}")
    return Corpus(bases, proposals, traffic, store_words, messages)


def _usable(word: str, own: set[str], kept: set[str]) -> bool:
    from knowledge.format.learned_words import fold_word, word_problem
    from knowledge.recall.analysis import analyze
    from shared.pii import redact

    if len(word) < 3 or word_problem(word) is not None or fold_word(word) in kept or redact(word).text != word:
        return False
    terms = analyze(word).terms()
    return bool(terms) and not set(terms) <= own


def concepts(corpus: Corpus, size: int, now: Optional[datetime] = None) -> list:
    """`size` concepts: the stores' concepts in turn, replica r of each named `<name>-<store>-r<r>`, each with
    its model words and traffic words (see the module's doc). Dated a month before `now`, so none is
    stale (an observed concept older than stale_after_days leaves recall)."""
    from knowledge.format.concept import Concept
    from knowledge.format.learned_words import LearnedWord, fold_word
    from knowledge.learning.model_words import gate_words
    from knowledge.recall.postings import concept_terms

    now = (now or datetime.now(UTC)).replace(microsecond=0)
    start = now - timedelta(days=30)
    out = []
    for i in range(size):
        store, base = corpus.bases[i % len(corpus.bases)]
        replica = i // len(corpus.bases)
        concept = Concept(name=f"{base['name']}-{store}-r{replica}", description=f"{base['description']} (réplica {replica})",
                          type=base["type"], provenance="policy" if base["type"] == "policy" else "observed",
                          confidence=0.6, sources=("sess_seed",), occurrences=1, created_at=start,
                          updated_at=start + timedelta(minutes=i % 1440), body=base["body"])
        day = (now - timedelta(days=1 + i % 20)).date()
        model, _ = gate_words(corpus.proposals[store].get(base["name"], []), concept)
        learned = [LearnedWord(w, "model", 0, day) for w in model]
        own = set(concept_terms(concept)[0])
        kept = {fold_word(w) for w in model}
        whole = corpus.store_words[store]
        offset = (i * 7) % max(1, len(whole))  # each concept and replica its own window of the store's words
        for word in [*corpus.traffic_words.get((store, base["name"]), []), *whole[offset:], *whole[:offset]]:
            if len(learned) >= WORDS:
                break
            if _usable(word, own, kept):
                kept.add(fold_word(word))
                learned.append(LearnedWord(word, "loaded", 3 + len(learned) % 5, day))
        out.append(concept.replace(learned_words=tuple(learned)))
    return out


# ------------------------------------------------------------------ the handler
@contextlib.contextmanager
def counting_requests() -> Iterator[Counter]:
    """Every HTTP request botocore sends meanwhile, by service (`s3`, `events`, ...)."""
    from botocore.endpoint import Endpoint

    counts: Counter = Counter()
    send = Endpoint._send

    def counted(self, request):
        counts[self._endpoint_prefix] += 1
        return send(self, request)

    Endpoint._send = counted
    try:
        yield counts
    finally:
        Endpoint._send = send


def write_agent(s3, bucket: str, agent: str, written: list) -> None:
    from knowledge.store.concepts import ConceptStore

    store = ConceptStore(s3, bucket)
    store.put_config(TENANT, agent, CONFIG, actor="engine")
    with ThreadPoolExecutor(max_workers=16) as pool:
        list(pool.map(lambda c: store.create(TENANT, agent, c, actor="engine"), written))


def time_handler(bucket: str, agent: str, messages: list[str], rounds: int) -> dict:
    """RetrieveFunction's handler, imported as a cold start does, warmed by one pass over `messages`,
    then timed over `rounds` passes; the S3 requests and the answers that injected, per warm call."""
    from knowledge_dev.handlers import handler_environment, load_handler
    from knowledge_dev.poller import LambdaContext

    settings = dict(KNOWLEDGE_BUCKET=bucket, EVENT_BUS_NAME="bench", KNOWLEDGE_REFRESH_SECONDS="3600",
                    KNOWLEDGE_FETCH_BUDGET_SECONDS="900", POWERTOOLS_METRICS_DISABLED="true",
                    POWERTOOLS_LOG_LEVEL="WARNING")
    with handler_environment(**settings):
        app = load_handler("retrieve", module_name=f"bench_stores_retrieve_{uuid.uuid4().hex[:8]}")
        context = LambdaContext("retrieve", timeout_ms=3_600_000)
        injected = Counter()

        def call(message: str) -> None:
            answer = app.lambda_handler({"tenant": TENANT, "agent": agent, "session_id": "s", "message": message},
                                        context)
            if "error" in answer:
                raise RuntimeError(f"retrieve refused a bench message: {answer['error']}")
            injected[bool(answer["block"])] += 1

        with contextlib.redirect_stdout(io.StringIO()):  # the EMF lines, if any
            start = time.perf_counter()
            call(messages[0])  # the cold start: every concept fetched (moto is slow at it)
            cold_s = time.perf_counter() - start
            for message in messages:  # the stemmer's memo warm, as a warm container has it
                call(message)
            injected.clear()
            with counting_requests() as requests:
                runs = [timed(call, messages) for _ in range(rounds)]
    calls = len(messages) * rounds
    if not injected[True]:
        raise NothingInjected(f"none of the {calls} timed answers of {agent} injected anything")
    medians = [statistics.median(r) for r in runs]
    return {"p50_ms": min(medians), "p50_rounds_ms": medians,
            "p95_ms": statistics.median(percentile(r, 0.95) for r in runs),
            "s3_per_call": requests["s3"] / calls, "requests_per_call": sum(requests.values()) / calls,
            "injected": injected[True] // rounds, "answers": len(messages), "cold_load_s": cold_s}


# ------------------------------------------------------------------ in process: the index, bm25s
def time_index(written: list, messages: list[str], rounds: int) -> dict:
    """`Index.relevant` alone on the same concepts and messages, with knowledge.yaml's floor."""
    from knowledge.format.config import parse_config
    from knowledge.recall.index import Index

    min_score = parse_config(CONFIG).min_score
    index = Index()
    for c in written:
        index.upsert(c.name, "etag", c, c.render().encode())
    index.settle()
    ask = lambda m: index.relevant(m, TOP_K, min_score)  # noqa: E731
    for m in messages:
        ask(m)
    medians = [statistics.median(timed(ask, messages)) for _ in range(rounds)]
    return {"p50_ms": min(medians), "p50_rounds_ms": medians, "injected": sum(1 for m in messages if ask(m))}


def bm25s_available() -> bool:
    try:
        import bm25s  # noqa: F401
    except ImportError:
        return False
    return True


def time_bm25s(written: list, messages: list[str], rounds: int) -> dict:
    """bm25s on the text the index reads (name, description, body, learned words), Portuguese
    stopwords; per message, tokenizing it and asking for the top 5, as a turn would."""
    import bm25s

    texts = [" ".join([c.name.replace("-", " "), c.description, c.body, *(e.word for e in c.learned_words)])
             for c in written]
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(texts, stopwords="pt", show_progress=False), show_progress=False)

    def ask(message: str):
        tokens = bm25s.tokenize([message], stopwords="pt", return_ids=False, show_progress=False)
        if not any(t in retriever.vocab_dict for t in tokens[0]):
            return None  # nothing it knows: bm25s refuses such a query; an engine would answer nothing
        return retriever.retrieve(tokens, k=min(TOP_K, len(texts)), show_progress=False, n_threads=1)

    for m in messages:
        ask(m)
    medians = [statistics.median(timed(ask, messages)) for _ in range(rounds)]
    return {"p50_ms": min(medians), "p50_rounds_ms": medians, "version": bm25s.__version__}


# ------------------------------------------------------------------ one size, every size
def bench_size(corpus: Corpus, size: int, s3, bucket: str, rounds: int, messages: Optional[list[str]] = None) -> dict:
    """Everything measured at `size` concepts, on the moto the environment's boto3 points at."""
    messages = messages or corpus.messages
    written = concepts(corpus, size)
    agent = f"{AGENT}-{size}"
    start = time.perf_counter()
    write_agent(s3, bucket, agent, written)
    row = {"concepts": size, "messages": len(messages), "write_s": time.perf_counter() - start,
           "learned_words": statistics.mean(len(c.learned_words) for c in written),
           "model_words": statistics.mean(sum(e.origin == "model" for e in c.learned_words) for c in written),
           "handler": time_handler(bucket, agent, messages, rounds),
           "index": time_index(written, messages, rounds)}
    row["bm25s"] = time_bm25s(written, messages, rounds) if bm25s_available() else None
    return row


def bench(sizes: list[int], rounds: int, each: Callable[[dict, dict], None] = lambda head, row: None,
          every: int = 1) -> dict:
    """Every size in one run (one moto server); `each(head, row)` is told each size as it is done;
    `every`: one test message in so many (the smoke run's few)."""
    import boto3

    corpus = load_corpus()
    corpus.messages = corpus.messages[::every]
    head = {"stores": sorted({s for s, _ in corpus.bases}), "base_concepts": len(corpus.bases),
            "messages": len(corpus.messages), "rounds": rounds}
    rows = []
    with moto("bench-stores"):
        s3 = boto3.client("s3")
        bucket = "bench-stores"
        s3.create_bucket(Bucket=bucket)
        s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
        for size in sizes:
            rows.append(bench_size(corpus, size, s3, bucket, rounds))
            each(head, rows[-1])
    return {**head, "rows": rows, "targets": targets(rows)}


def targets(rows: list[dict]) -> dict[str, Optional[bool]]:
    at = {r["concepts"]: r for r in rows}
    return {
        "handler p50 <= 0.5 ms at 5,000": at[5000]["handler"]["p50_ms"] <= 0.5 if 5000 in at else None,
        "handler p50 <= bm25s p50 at every size": (all(r["handler"]["p50_ms"] <= r["bm25s"]["p50_ms"] for r in rows)
                                                   if all(r["bm25s"] for r in rows) else None),
        "Index.relevant p50 <= 0.1 ms at 1,000": at[1000]["index"]["p50_ms"] <= 0.1 if 1000 in at else None,
        "0 S3 requests per warm call": all(r["handler"]["s3_per_call"] == 0 for r in rows),
    }


def print_head(head: dict) -> None:
    print(f"RetrieveFunction's handler (moto's server, warm) on the tuning stores' texts ({', '.join(head['stores'])}:"
          f" {head['base_concepts']} concepts, replicated) and their {head['messages']} test messages;\n"
          f"each p50 the minimum of {head['rounds']} rounds' medians; bm25s and Index.relevant in this process, "
          "same corpus, same messages, same run")
    if not bm25s_available():
        print("  bm25s is not installed: its columns are skipped "
              "(.venv/bin/pip install -e '.[bench]': a bench-only comparison)")
    print(f"  {'concepts':>8} {'words':>6} {'handler p50':>12} {'p95':>9} {'S3/call':>8} {'injected':>12} "
          f"{'index p50':>10} {'bm25s p50':>10} {'handler/bm25s':>14} {'index/bm25s':>12}", flush=True)


def print_row(r: dict) -> None:
    h, i, b = r["handler"], r["index"], r["bm25s"]
    bm = (f"{b['p50_ms']:>7.3f} ms {h['p50_ms'] / b['p50_ms']:>13.2f}x {i['p50_ms'] / b['p50_ms']:>11.2f}x"
          if b else f"{'-':>10} {'-':>14} {'-':>12}")
    print(f"  {r['concepts']:>8} {r['learned_words']:>6.1f} {h['p50_ms']:>9.3f} ms {h['p95_ms']:>6.3f} ms "
          f"{h['s3_per_call']:>8.2f} {h['injected']:>5} of {h['answers']:<4} {i['p50_ms']:>7.3f} ms {bm}", flush=True)


def print_targets(result: dict) -> None:
    print("\ntargets:")
    for name, met in result["targets"].items():
        print(f"  {name:<42} {'n/a' if met is None else ('met' if met else 'NOT met')}")


def main() -> int:
    args_parser = parser(__doc__)
    args_parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 5000, 20000])
    args_parser.add_argument("--rounds", type=int, default=5)
    args = args_parser.parse_args()
    every = 10 if args.smoke else 1
    if args.smoke:
        args.sizes, args.rounds = [100], 1
    if any(size < 1 for size in args.sizes) or args.rounds < 1:
        args_parser.error("sizes and rounds must be positive")
    if args.json:
        result = bench(args.sizes, args.rounds, every=every)
        print(json.dumps(result, indent=1))
        did_injected(result, as_json=True)
        return 0
    printed: list[bool] = []

    def each(head: dict, row: dict) -> None:
        if not printed:
            print_head(head)
            printed.append(True)
        print_row(row)

    result = bench(args.sizes, args.rounds, each, every)
    print_targets(result)
    did_injected(result)
    return 0


def did_injected(result: dict, as_json: bool = False) -> None:
    handler = [r["handler"] for r in result["rows"]]
    did_work("timed handler answers injected something (a pass's)", sum(h["injected"] for h in handler),
             sum(h["answers"] for h in handler), as_json=as_json)


if __name__ == "__main__":
    sys.exit(main())
