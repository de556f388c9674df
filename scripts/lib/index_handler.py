"""RetrieveFunction's handler for bench/knowledge_index.py: cold start and refresh against moto's
server in S3 requests and time, the warm handler call, and issue 24's speed table (the handler beside
plain overlap). Every timed handler answer is counted: a bench of empty answers times nothing."""

from __future__ import annotations

import contextlib
import io
import os
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

from scripts.lib.harness import ROOT, NoWorkDone, moto, percentile, timed
from scripts.lib.index_process import bench_cold_process
from scripts.lib.synthetic_corpus import build_index, corpus, queries


def bench_cold_and_handler(sizes: list[int], handler_size: int, cold_runs: int = 5, handler_queries: int = 200) -> dict:
    with moto("bench"):
        return _cold_and_handler(sizes, handler_size, cold_runs, handler_queries)


def _cold_and_handler(sizes: list[int], handler_size: int, cold_runs: int, handler_queries: int) -> dict:
    import boto3

    from knowledge.store.concepts import ConceptStore

    s3 = boto3.client("s3")
    s3.create_bucket(Bucket="bench-index")
    s3.put_bucket_versioning(Bucket="bench-index", VersioningConfiguration={"Status": "Enabled"})
    store = ConceptStore(s3, "bench-index")
    result = {"cold": []}
    for size in sorted(set(sizes + [handler_size])):
        agent = f"agent-{size}"
        store.put_config("default", agent, "knowledge: {}\n", actor="engine")
        concepts, zipf = corpus(size)
        with ThreadPoolExecutor(max_workers=16) as pool:
            list(pool.map(lambda c: store.create("default", agent, c, actor="engine"), concepts))
        if size in sizes:
            result["cold"].append(bench_cold(store, agent, size, corpus_names=[c.name for c in concepts]))
        if size == handler_size:
            result["handler"] = bench_handler(agent, queries(zipf, handler_queries))
    result["cold_process"] = bench_cold_process(store, cold_runs)
    return result


def bench_cold(store, agent: str, size: int, corpus_names: list[str]) -> dict:
    """S3 requests and time of: the first container ever (no snapshot: every concept, then the
    snapshot written), a cold container (the snapshot and the journal), a quiet refresh, and a
    refresh after one concept changed."""
    import boto3

    from knowledge.recall.retrieve import Retriever, RetrieveRequest
    from knowledge.store.concepts import ConceptStore

    class NoEvents:
        def publish(self, detail_type, detail):
            pass

    counted = boto3.client("s3")
    calls = {"n": 0}
    counted.meta.events.register("before-send.s3", lambda **kw: calls.__setitem__("n", calls["n"] + 1))
    request = RetrieveRequest(agent=agent, session_id="s", message="frete para campinas")
    row: dict = {"concepts": size}

    def measured(label: str, fn) -> None:
        calls["n"] = 0
        start = time.perf_counter()
        fn()
        row[f"{label}_ms"], row[f"{label}_requests"] = (time.perf_counter() - start) * 1000, calls["n"]

    # No fetch budget: the first container loads the whole agent (moto is slow at it).
    first = Retriever(ConceptStore(counted, "bench-index"), NoEvents(), refresh_seconds=60, fetch_budget_seconds=3600)
    measured("first", lambda: first.retrieve(request))
    clock = {"now": 0.0}
    cold = Retriever(ConceptStore(counted, "bench-index"), NoEvents(), refresh_seconds=5,
                     clock=lambda: clock["now"])
    measured("cold", lambda: cold.retrieve(request))
    row["cold_answer_matches"] = cold.retrieve(request) == first.retrieve(request)
    clock["now"] += 5
    measured("quiet", lambda: cold.retrieve(request))
    current = store.get("default", agent, corpus_names[0])
    store.replace("default", agent, current.concept.replace(description="Frete grátis para Campinas."),
                  if_match=current.etag, actor="engine", reason="edit")
    clock["now"] += 5
    measured("changed", lambda: cold.retrieve(request))
    row["snapshot_bytes"] = len(store.get_snapshot("default", agent).data)
    return row


class NothingInjected(NoWorkDone):
    """Every timed answer of the handler was an empty block: the bench timed no retrieval."""


class HandlerCalls:
    """RetrieveFunction's handler, imported as a cold start does (`module`: its own module name), called
    on one agent, a message per call; it counts the answers that inject something, since a bench of
    empty answers (stale concepts, no shared word) times a handler that does nothing."""

    def __init__(self, agent: str, module: str):
        import importlib.util

        spec = importlib.util.spec_from_file_location(module, ROOT / "functions" / "retrieve" / "app.py")
        self.app = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(self.app)
        self.agent, self.calls, self.injected = agent, 0, 0

        class Context:
            function_name, memory_limit_in_mb, aws_request_id = "bench", 512, "r"
            invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:bench"

            def get_remaining_time_in_millis(self):
                return 3_600_000

        self.context = Context()

    def __call__(self, message: str) -> None:
        answer = self.app.lambda_handler({"agent": self.agent, "session_id": "s", "message": message}, self.context)
        if "error" in answer:
            raise RuntimeError(f"retrieve refused a bench message: {answer['error']}")
        self.calls += 1
        self.injected += bool(answer["block"])

    def restart(self) -> None:
        """The calls so far were no timed answers (warming): the count starts again."""
        self.calls = self.injected = 0

    def counted(self) -> tuple[int, int]:
        """(answers that injected, answers) since the count started; NothingInjected when none did."""
        done = (self.injected, self.calls)
        self.restart()
        if not done[0]:
            raise NothingInjected(f"none of the {done[1]} timed answers of {self.agent} injected anything: "
                                  "the bench would time empty answers")
        return done


def bench_handler(agent: str, qs: list[str], bucket: str = "bench-index") -> dict:
    from knowledge_dev.handlers import handler_environment

    # The first call loads the whole agent (no fetch budget: moto is slow), then calls are timed warm.
    with handler_environment(KNOWLEDGE_BUCKET=bucket, EVENT_BUS_NAME="bench", KNOWLEDGE_REFRESH_SECONDS="60",
                             KNOWLEDGE_FETCH_BUDGET_SECONDS="900", POWERTOOLS_SERVICE_NAME="bench-retrieve",
                             POWERTOOLS_LOG_LEVEL="WARNING"):
        call = HandlerCalls(agent, f"bench_retrieve_app_{bucket}")
        with contextlib.redirect_stdout(io.StringIO()):  # the EMF lines
            call(qs[0])
            call.restart()
            calls = timed(call, qs)
        injected, answers = call.counted()
    return {"concepts": int(agent.split("-")[1]), "p50_ms": statistics.median(calls), "p95_ms": percentile(calls, 0.95),
            "injected": injected, "answers": answers}


def bench_speed(sizes: list[int], n_queries: int, rounds: int = 5, vocabularies: bool = True) -> dict:
    """Issue 24's speed table: the handler against plain overlap in one run, the warm p50 at
    1,000 as the minimum of `rounds`, and numpy's cost."""
    with moto("bench-speed"):
        import boto3

        from knowledge.recall.overlap import OverlapScan
        from knowledge.store.concepts import ConceptStore

        s3 = boto3.client("s3")
        s3.create_bucket(Bucket="bench-index")
        store = ConceptStore(s3, "bench-index")
        handler_rows = []
        for size in sizes:
            concepts, zipf = corpus(size)
            qs = queries(zipf, n_queries)
            scan = OverlapScan(concepts)
            agents = [(f"plain-{size}", None)]
            if vocabularies:  # (an older checkout, for a before/after table, has none)
                from knowledge.format.vocabulary import starter_text

                agents.append((f"starter-{size}", starter_text("varejo-br")))
            for agent, vocabulary in agents:
                store.put_config("default", agent, "knowledge: {}\n", actor="engine")
                if vocabulary:
                    store.put_vocabulary("default", agent, vocabulary, actor="engine")
                with ThreadPoolExecutor(max_workers=16) as pool:
                    list(pool.map(lambda c: store.create("default", agent, c, actor="engine"), concepts))
                call = _warm_handler(agent, qs)
                calls = [timed(call, qs) for _ in range(rounds)]
                injected, answers = call.counted()
                overlap = [timed(lambda q: scan.search(q, 5), qs) for _ in range(rounds)]
                p50 = min(statistics.median(c) for c in calls)
                overlap_p50 = min(statistics.median(o) for o in overlap)
                handler_rows.append({"concepts": size, "vocabulary": "retail starter" if vocabulary else "none",
                                     "handler_p50_ms": p50, "overlap_p50_ms": overlap_p50,
                                     "ratio": overlap_p50 / p50, "injected": injected, "answers": answers})
    concepts, zipf = corpus(1000)
    index = build_index(concepts)
    qs = queries(zipf, n_queries)
    for q in qs:
        index.relevant(q, 5, 1.0)
    warm = [statistics.median(timed(lambda q: index.relevant(q, 5, 1.0), qs)) for _ in range(rounds)]
    return {"handler": handler_rows, "warm_1000_p50_ms": min(warm), "warm_1000_rounds_ms": warm,
            "numpy": _numpy_cost(rounds)}


def _warm_handler(agent: str, qs: list[str]) -> HandlerCalls:
    """RetrieveFunction's handler, imported as a cold start does, warmed on `agent`: a call per message."""
    os.environ.update({"KNOWLEDGE_BUCKET": "bench-index", "EVENT_BUS_NAME": "bench", "KNOWLEDGE_REFRESH_SECONDS": "600",
                       "KNOWLEDGE_FETCH_BUDGET_SECONDS": "900", "POWERTOOLS_METRICS_DISABLED": "true",
                       "POWERTOOLS_SERVICE_NAME": "bench-retrieve", "POWERTOOLS_LOG_LEVEL": "WARNING"})
    call = HandlerCalls(agent, f"bench_retrieve_{agent}")
    with contextlib.redirect_stdout(io.StringIO()):
        for q in qs:  # the whole agent fetched, the stemmer's memo warm, as a warm container has them
            call(q)
    call.restart()
    return call


def _numpy_cost(runs: int) -> dict:
    """numpy's import time and the RSS it adds, each in a fresh process (the minimum of `runs`)."""
    code = ("import time\n"
            "def rss():\n"
            "    return int(next(l for l in open('/proc/self/status') if l.startswith('VmRSS')).split()[1]) / 1024\n"
            "before = rss(); start = time.perf_counter()\n"
            "import numpy\n"
            "print((time.perf_counter() - start) * 1000, rss() - before)\n")
    runs_out = [tuple(map(float, subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                                check=True).stdout.split())) for _ in range(runs)]
    return {"import_ms_min": min(r[0] for r in runs_out), "import_ms_p50": statistics.median(r[0] for r in runs_out),
            "rss_mb": statistics.median(r[1] for r in runs_out)}


def print_speed(speed: dict) -> None:
    print("through RetrieveFunction's handler (moto's server, warm), against plain term overlap on the same\n"
          "messages in the same run; each p50 the minimum of 5 rounds")
    print(f"  {'concepts':>8} {'vocabulary':<15} {'handler p50':>12} {'overlap p50':>12} {'ratio':>7} "
          f"{'answers that injected':>22}")
    for r in speed["handler"]:
        print(f"  {r['concepts']:>8} {r['vocabulary']:<15} {r['handler_p50_ms']:>9.3f} ms "
              f"{r['overlap_p50_ms']:>9.3f} ms {r['ratio']:>6.1f}x {r['injected']:>10} of {r['answers']}")
    rounds = ", ".join(f"{v:.4f}" for v in speed["warm_1000_rounds_ms"])
    print(f"\nwarm index p50 at 1,000 concepts (Index.relevant): min of 5 rounds {speed['warm_1000_p50_ms']:.4f} ms "
          f"(rounds: {rounds})")
    n = speed["numpy"]
    print(f"numpy in a fresh process: import {n['import_ms_min']:.0f} ms (min; p50 {n['import_ms_p50']:.0f} ms), "
          f"RSS +{n['rss_mb']:.0f} MB")
