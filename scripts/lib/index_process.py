"""The fresh processes bench/knowledge_index.py measures: a whole cold start on a copy of the layer, the
RSS of a process holding the index, the handler's import, and many agents in one container under the
memory budget. Each child runs as `python -m scripts.bench.knowledge_index --<child> ...`."""

from __future__ import annotations

import json
import os
import random
import re
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from scripts.lib.harness import ROOT, child
from scripts.lib.synthetic_corpus import Zipf, build_index, corpus, generate, queries, vocabulary

ENTRY = "scripts.bench.knowledge_index"  # the children's entry point


COLD_PROCESS = '''
import importlib.util, json, sys, time
start = time.perf_counter()
spec = importlib.util.spec_from_file_location("app", sys.argv[1])
app = importlib.util.module_from_spec(spec)
spec.loader.exec_module(app)
imported = time.perf_counter()

class Context:
    function_name, memory_limit_in_mb, aws_request_id = "bench", 512, "r"
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:bench"
    def get_remaining_time_in_millis(self):
        return 10_000

answer = app.lambda_handler({"agent": sys.argv[2], "session_id": "s", "message": "frete para campinas"}, Context())
done = time.perf_counter()
assert "error" not in answer, answer
print(json.dumps({"import_ms": (imported - start) * 1000, "first_call_ms": (done - imported) * 1000}))
'''


def layer_copy(dest: Path, compiled: bool) -> Path:
    """The core layer as Lambda sees it, from this environment's installed files: the
    distributions of layers/core/requirements.txt (and theirs) plus the knowledge package,
    with no bytecode (what BuildMethod: python3.13 shipped) or compiled the way
    layers/core/Makefile compiles it (unchecked-hash .pyc)."""
    import compileall
    import importlib.metadata as metadata
    import py_compile
    import shutil

    def name_of(requirement: str) -> str:
        return re.match(r"[A-Za-z0-9._-]+", requirement.strip()).group(0)

    todo = [name_of(line) for line in (ROOT / "layers/core/requirements.txt").read_text().splitlines()
            if line.strip() and not line.startswith("#")]
    seen: set[str] = set()
    while todo:
        name = todo.pop().lower().replace("_", "-")
        if name in seen:
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        seen.add(name)
        for file in dist.files or []:
            if "__pycache__" in file.parts or file.suffix == ".pyc" or file.parts[0].endswith((".data", "..")):
                continue
            source = Path(file.locate())
            if source.is_file():
                (dest / file).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, dest / file)
        todo += [name_of(r) for r in dist.requires or [] if "extra ==" not in r]
    for package in ("knowledge", "shared"):
        shutil.copytree(ROOT / "layers/core" / package, dest / package, ignore=shutil.ignore_patterns("__pycache__"))
    if compiled:
        compileall.compile_dir(dest, quiet=2, workers=0,
                               invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
    return dest


def bench_cold_process(store, runs: int) -> list[dict]:
    """A whole cold start in a fresh process, per mode: the handler's import, then its first
    call (50 concepts, so the fixed costs show). On demand, the service is built by the first
    call; with provisioned concurrency (or SnapStart) it is built during the import. The
    process sees only the layer (python -S), with or without its bytecode. No runs (the smoke run):
    no copy of the layer either, the slowest part of a small run."""
    import tempfile

    if runs < 1:
        return []
    agent = "agent-cold"
    store.put_config("default", agent, "knowledge: {}\n", actor="engine")
    concepts, _ = corpus(50)
    with ThreadPoolExecutor(max_workers=16) as pool:
        list(pool.map(lambda c: store.create("default", agent, c, actor="engine"), concepts))
    work = Path(tempfile.mkdtemp(prefix="bench-layer-"))
    with_pyc, without_pyc = layer_copy(work / "compiled", True), layer_copy(work / "plain", False)
    on_demand, provisioned = "on-demand", "provisioned-concurrency"
    modes = [(f"{on_demand}, layer with .pyc", with_pyc, on_demand, "__all__"),
             (f"{provisioned}, layer with .pyc", with_pyc, provisioned, "__all__"),
             (f"{on_demand}, layer without .pyc", without_pyc, on_demand, "__all__"),
             (f"{provisioned}, layer without .pyc", without_pyc, provisioned, "__all__"),
             (f"{on_demand}, with .pyc, pydantic plugin scan on", with_pyc, on_demand, "")]
    base = {**os.environ, "KNOWLEDGE_BUCKET": "bench-index", "EVENT_BUS_NAME": "bench",
            "POWERTOOLS_SERVICE_NAME": "bench-retrieve", "POWERTOOLS_LOG_LEVEL": "WARNING",
            "POWERTOOLS_METRICS_DISABLED": "true", "PYTHONDONTWRITEBYTECODE": "1"}
    samples: dict[str, list[dict]] = {mode[0]: [] for mode in modes}
    try:
        for _ in range(runs):  # interleaved, so a noisy moment hurts every mode alike
            for name, layer, init_type, plugins in modes:
                env = {**base, "PYTHONPATH": str(layer), "AWS_LAMBDA_INITIALIZATION_TYPE": init_type,
                       "PYDANTIC_DISABLE_PLUGINS": plugins}
                out = subprocess.run([sys.executable, "-S", "-c", COLD_PROCESS,
                                      str(ROOT / "functions" / "retrieve" / "app.py"), agent],
                                     env=env, capture_output=True, text=True, check=True)
                samples[name].append(json.loads(out.stdout))
    finally:
        import shutil

        shutil.rmtree(work, ignore_errors=True)
    rows = []
    for name, *_ in modes:
        imports = [s["import_ms"] for s in samples[name]]
        firsts = [s["first_call_ms"] for s in samples[name]]
        totals = [s["import_ms"] + s["first_call_ms"] for s in samples[name]]
        rows.append({"mode": name, "runs": runs, "import_p50_ms": statistics.median(imports),
                     "first_call_p50_ms": statistics.median(firsts), "total_p50_ms": statistics.median(totals)})
    for row in rows:
        row["total_vs_first"] = row["total_p50_ms"] / rows[0]["total_p50_ms"]
    return rows


def _status_mb(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


def rss_child(size: int, trace: bool = False) -> None:
    """A process as the container has it: the handler's imports, then the index (with each
    concept's text, as a warm container keeps it)."""
    import tracemalloc

    import aws_lambda_powertools.logging  # noqa: F401
    import boto3  # noqa: F401 - what the function imports anyway

    from knowledge.format.concept import parse
    from knowledge.recall import retrieve  # noqa: F401
    from knowledge.recall.index import Index

    zipf = Zipf(vocabulary(8000, random.Random(7)), random.Random(7))
    before = _status_mb("VmRSS")
    if trace:
        tracemalloc.start()
    index = Index()
    for concept in generate(size, zipf):  # as a refresh does: stored bytes in, parsed, indexed
        data = concept.render().encode()
        index.upsert(concept.name, "etag", parse(data), data)
    index.settle()
    if trace:  # tracemalloc's own bookkeeping inflates RSS: the two are measured in separate runs
        live, _ = tracemalloc.get_traced_memory()
        print(json.dumps({"index_mb": live / 2**20}))
        return
    print(json.dumps({"concepts": size, "rss_mb": _status_mb("VmRSS"), "peak_mb": _status_mb("VmHWM"),
                      "before_mb": before, "docs": len(index)}))


def bench_rss(sizes: list[int]) -> list[dict]:
    rows = []
    for size in sizes:
        row = {}
        for extra in ([], ["--trace"]):
            out = child(ENTRY, "--rss-child", str(size), *extra)
            row.update(json.loads(out.stdout))
        rows.append(row)
    return rows


def bench_import(runs: int = 5) -> dict:
    code = ("import os, time, importlib.util, sys\n"
            "start = time.perf_counter()\n"
            f"spec = importlib.util.spec_from_file_location('app', {str(ROOT / 'functions' / 'retrieve' / 'app.py')!r})\n"
            "module = importlib.util.module_from_spec(spec); spec.loader.exec_module(module)\n"
            "print((time.perf_counter() - start) * 1000)\n")
    env = {**os.environ, "AWS_LAMBDA_INITIALIZATION_TYPE": "on-demand", "KNOWLEDGE_BUCKET": "bench-index", "EVENT_BUS_NAME": "bench", "AWS_DEFAULT_REGION": "us-east-1",
           "AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "x"}
    times = [float(subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                                  check=True).stdout) for _ in range(runs)]
    # The same run's floor: boto3 alone, which every function imports.
    floor = ("import time\nstart = time.perf_counter()\nimport boto3\n"
             "print((time.perf_counter() - start) * 1000)\n")
    boto = [float(subprocess.run([sys.executable, "-c", floor], env=env, capture_output=True, text=True,
                                 check=True).stdout) for _ in range(runs)]
    return {"p50_ms": statistics.median(times), "min_ms": min(times), "runs": runs,
            "boto3_alone_p50_ms": statistics.median(boto)}


# ------------------------------------------------------------------ many agents, one container
AGENT_TENANT = "default"


def agents_build_child(folder: str, agents: int, per_agent: int) -> None:
    """Every agent's snapshot, built in-process and written to `folder` (seeding moto with
    200,000 objects would take hours; the snapshots are what a cold start reads anyway)."""
    from knowledge.recall.snapshot import Snapshot, encode

    words = vocabulary(8000, random.Random(7))
    total = 0
    for i in range(agents):
        zipf = Zipf(words, random.Random(i))
        index = build_index(generate(per_agent, zipf, seed=i))
        data = encode(Snapshot(AGENT_TENANT, f"agent-{i}", index, time.time(), "knowledge: {}\n", '"config"'))
        Path(folder, f"agent-{i}").write_bytes(data)
        total += len(data)
    print(json.dumps({"snapshot_bytes": total}))


def agents_traffic_child(folder: str, agents: int, requests: int, memory_mb: int) -> None:
    """Zipf traffic over the agents against one container's warm indexes, under the budget a
    function of `memory_mb` gets (0: no budget); snapshots come from `folder`, not S3."""
    import aws_lambda_powertools.logging  # noqa: F401
    import boto3  # noqa: F401 - what the function imports anyway

    from knowledge.recall.warm import WarmIndexes, memory_budget_bytes
    from knowledge.store.concepts import NotModified, StoredSnapshot

    class FolderSnapshots:
        """The three reads a cold start makes: the snapshot (a file), the journal (empty), and the
        conditional read of knowledge.yaml (unchanged since the snapshot: S3's 304)."""

        def get_snapshot(self, tenant, agent):
            return StoredSnapshot(Path(folder, agent).read_bytes(), '"snapshot"')

        def get_config(self, tenant, agent, *, unless_etag=None):
            if unless_etag != '"config"':
                raise AssertionError("the snapshot's config is what a cold start asks about")
            raise NotModified("knowledge.yaml unchanged")

        def changes_since(self, tenant, agent, since):
            return []

    budget = memory_budget_bytes({"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(memory_mb)}) if memory_mb else None
    warm = WarmIndexes(FolderSnapshots(), lambda config: config.retrieve, refresh_seconds=3600,
                       sweep_seconds=1e9, memory_budget=budget)
    rng = random.Random(42)
    ranks = Zipf([f"agent-{i}" for i in rng.sample(range(agents), agents)], rng, s=1.1)
    traffic = ranks.sample(requests)
    qs = queries(Zipf(vocabulary(8000, random.Random(7)), random.Random(7)), 50)
    before = _status_mb("VmRSS")
    hits, misses_ms, calls_ms = 0, [], []
    for n, agent in enumerate(traffic):
        hit = warm.holds(AGENT_TENANT, agent)
        start = time.perf_counter()
        knowledge = warm.knowledge(AGENT_TENANT, agent)
        knowledge.index.relevant(qs[n % len(qs)], 5, 1.0)
        elapsed = (time.perf_counter() - start) * 1000
        hits += hit
        (calls_ms if hit else misses_ms).append(elapsed)
    print(json.dumps({"memory_mb": memory_mb, "budget_mb": budget / 2**20 if budget else None,
                      "requests": requests, "agents_seen": len(set(traffic)), "hit_rate": hits / requests,
                      "evicted": warm.counters.get("IndexEvicted"), "held_mb": warm.held_bytes() / 2**20,
                      "held_agents": sum(warm.holds(AGENT_TENANT, f"agent-{i}") for i in range(agents)),
                      "rss_before_mb": before, "rss_mb": _status_mb("VmRSS"), "peak_rss_mb": _status_mb("VmHWM"),
                      "miss_p50_ms": statistics.median(misses_ms) if misses_ms else None,
                      "hit_p50_ms": statistics.median(calls_ms) if calls_ms else None}))


def bench_agents(agents: int, per_agent: int, requests: int) -> dict:
    import shutil
    import tempfile

    folder = tempfile.mkdtemp(prefix="bench-agents-")
    try:
        start = time.perf_counter()
        built = json.loads(child(ENTRY, "--agents-build", folder, str(agents), str(per_agent)).stdout)
        built["build_s"] = time.perf_counter() - start
        runs = [json.loads(child(ENTRY, "--agents-traffic", folder, str(agents), str(requests), str(memory_mb)).stdout)
                for memory_mb in (512, 0)]
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return {"agents": agents, "per_agent": per_agent, **built, "runs": runs}


def print_agents(many: dict) -> None:
    print(f"\n{many['agents']} agents x {many['per_agent']} concepts in one container, Zipf (s=1.1) traffic; "
          f"snapshots built in-process ({many['snapshot_bytes'] / 2**20:.1f} MB in all, {many['build_s']:.0f} s) and "
          "read from local files instead of S3")
    print(f"  {'function memory':<16} {'budget':>8} {'requests':>9} {'hit rate':>9} {'evicted':>8} {'held':>14} "
          f"{'RSS before':>11} {'peak RSS':>9} {'miss p50':>9} {'hit p50':>8}")
    for r in many["runs"]:
        label = f"{r['memory_mb']} MB" if r["memory_mb"] else "no budget"
        budget = f"{r['budget_mb']:.0f} MB" if r["budget_mb"] else "-"
        print(f"  {label:<16} {budget:>8} {r['requests']:>9} {r['hit_rate']:>8.1%} {r['evicted']:>8} "
              f"{r['held_agents']:>4} / {r['held_mb']:>5.0f} MB {r['rss_before_mb']:>8.0f} MB {r['peak_rss_mb']:>6.0f} MB "
              f"{r['miss_p50_ms']:>6.2f} ms {r['hit_p50_ms']:>5.2f} ms")
