#!/usr/bin/env python3
"""The studio's list at scale, measured: the first page a fresh StudioApiFunction answers.

    ./run script bench.studio_list [--sizes 1000 5000] [--runs 5] [--warm 10] [--json] [--smoke]

Against moto's server, for an agent of 1,000 and of 5,000 synthetic concepts (written through
the store, so each carries its writer's metadata), each run starts a fresh process that imports
functions/studio_api/app.py (its cold start) and asks GET /tenants/default/agents/{agent}/concepts?limit=50
through the real handler, then asks again `--warm` times (the warm list). Per mode, over the runs:
p50/p95 of the first page and of the warm page, and the S3 requests of each:

- cold, snapshot present: the agent's snapshot (knowledge.recall.snapshot) and one listing;
- cold, no snapshot: every concept read (as before), then the snapshot written for the next;
- today's path: the same handler with the snapshot unreadable to it (403, as a policy without
  its key) and a full listing on every call: a listing and a GET per concept first, then a
  listing per page, which is what the list did before the snapshot and the journal; the ratio
  column compares each mode's first page with it.

A warm page reads the change journal since its last look (one request when nothing changed);
seeding waits out the journal's grace so that the warm pages do not list the seeding itself.

Targets (issue 13): a first list at 1,000 concepts under 1 s, the warm list under 200 ms.
The review state the API reads per request (the operator's `seen_at`) is in the counts.

    ./run script bench.studio_list --after-writes 4000 [--sizes 1000 5000] [--runs 3] [--warm 10]

After bulk writes (issue 28): the agent's snapshot is written, then `--after-writes` engine
writes change its concepts (each a confirmation, round-robin, as consolidation writes them), so
the snapshot is behind by min(writes, size) concepts. Per call kind (the first list page, a
search, the tenant's agents overview), each run starts a fresh API process that asks that call
first (cold) and then `--warm` times more (warm), in three states:

- before (no budget): the stale snapshot, and the catch-up budget lifted (the container reads
  every changed concept before it answers, as it did before issue 28): the baseline;
- stale snapshot: the stale snapshot, the budget as shipped (answers partial, `catching_up`);
- after the snapshot pass: SnapshotFunction's pass (knowledge.operation.snapshots, timed) has
  brought the snapshot up to date.

The stale snapshot is put back before each run. Per row: p50/p95 of the cold and warm calls,
the S3 requests of each (the most any run made), what the cold answer had not read yet
(`catching_up`), the warm calls until it was 0, and the cold p50 over the baseline's.

Either run ends with how many of the timed answers listed rows (a full first page of 50; a list,
search or overview that is not empty): none fails the run.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor

from knowledge_dev.local_aws import apply_journal_lifecycle
from scripts.lib import harness
from scripts.lib.harness import ROOT, Column, did_work, emit, moto, percentile, print_table
from scripts.lib.synthetic_corpus import corpus

BUCKET, TENANT = "bench-studio", "default"
MODES = ("cold, snapshot present", "cold, no snapshot", "today's path")
CLAIMS = {"sub": "bench-operator", "cognito:groups": "[default]"}
SEARCH = "frete entrega prazo"  # store words: the search has to rank many matches
STATES = ("before (no budget)", "stale snapshot", "after the snapshot pass")
KINDS = ("list", "search", "overview")


def seed(store, agent: str, size: int) -> None:
    store.put_config(TENANT, agent, "knowledge: {}\n", actor="operator:bench")
    concepts, _ = corpus(size)
    with ThreadPoolExecutor(max_workers=16) as pool:
        list(pool.map(lambda c: store.create(TENANT, agent, c, actor="engine"), concepts))


class Context:
    """What the handler reads of Lambda's context."""

    function_name = "bench-studio"
    memory_limit_in_mb = 512
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:bench-studio"
    aws_request_id = "00000000-0000-0000-0000-000000000000"

    def get_remaining_time_in_millis(self) -> int:
        return 29_000


class Unbounded(Context):
    def get_remaining_time_in_millis(self) -> int:
        return 3_600_000


def event(agent: str, kind: str = "list", tenant: str = TENANT) -> dict:
    base = json.loads((ROOT / "events" / "studio-list-conflicts.json").read_text())
    path = f"/tenants/{tenant}/agents" if kind == "overview" else f"/tenants/{tenant}/agents/{agent}/concepts"
    query = {"list": {"limit": "50"}, "search": {"limit": "50", "q": SEARCH}, "overview": None}[kind]
    base["rawPath"] = base["requestContext"]["http"]["path"] = path
    base["queryStringParameters"] = query
    base["rawQueryString"] = "&".join(f"{k}={v}" for k, v in (query or {}).items())
    base["requestContext"]["authorizer"]["jwt"]["claims"] = {**CLAIMS, "cognito:groups": f"[{tenant}]"}
    return base


def child(agent: str, mode: str, warm: int) -> None:
    """One fresh API process: import the handler, the first page, then the warm pages."""
    from shared.aws import client

    if mode == "today's path":
        from botocore.exceptions import ClientError

        from knowledge.store.concepts import ConceptStore
        from shared.awscall import translate

        def refused(*args, **kwargs):
            raise translate(ClientError({"Error": {"Code": "AccessDenied"},
                                         "ResponseMetadata": {"HTTPStatusCode": 403}}, "GetObject"))

        ConceptStore.get_snapshot = ConceptStore.put_snapshot = refused  # type: ignore[method-assign]
        from knowledge.curation.studio import Studio

        Studio.__init__.__kwdefaults__["sweep_seconds"] = 0.0  # a full listing every time, as before the journal
    from knowledge_dev.handlers import load_handler

    started = time.perf_counter()
    handler = load_handler("studio_api", template_settings=False)
    import_ms = (time.perf_counter() - started) * 1000
    calls = [0]
    client("s3").meta.events.register("before-send.s3", lambda **kwargs: calls.__setitem__(0, calls[0] + 1))
    request = event(agent)

    def ask() -> tuple[float, int]:
        calls[0] = 0
        start = time.perf_counter()
        answer = handler.lambda_handler(request, Context())
        took = (time.perf_counter() - start) * 1000
        if answer["statusCode"] != 200 or len(json.loads(answer["body"])["concepts"]) != 50:
            raise SystemExit(f"unexpected answer {answer['statusCode']}: {answer.get('body', '')[:200]}")
        return took, calls[0]

    first_ms, first_requests = ask()
    warm_runs = [ask() for _ in range(warm)]
    print(json.dumps({"import_ms": import_ms, "first_ms": first_ms, "first_requests": first_requests,
                      "warm_ms": [ms for ms, _ in warm_runs], "warm_requests": warm_runs[0][1] if warm_runs else 0,
                      "pages": 1 + warm, "pages_listed": 1 + warm}))  # a page of fewer than 50 rows ended the child


def after_writes_child(tenant: str, agent: str, state: str, kind: str, warm: int) -> None:
    """One fresh API process after bulk writes: `kind` asked first (cold), then `warm` times."""
    from shared.aws import client

    if state == STATES[0]:
        from knowledge.curation.studio import Studio

        Studio.__init__.__kwdefaults__["catch_up_seconds"] = 1e9  # every change read before answering
    from knowledge_dev.handlers import load_handler

    handler = load_handler("studio_api", template_settings=False)
    calls = [0]
    client("s3").meta.events.register("before-send.s3", lambda **kwargs: calls.__setitem__(0, calls[0] + 1))
    request = event(agent, kind, tenant)

    context = Unbounded() if state == STATES[0] else Context()  # the baseline is timed, not cut at 29 s

    def ask() -> dict:
        calls[0] = 0
        start = time.perf_counter()
        answer = handler.lambda_handler(request, context)
        took = (time.perf_counter() - start) * 1000
        if answer["statusCode"] != 200:
            raise SystemExit(f"unexpected answer {answer['statusCode']}: {answer.get('body', '')[:200]}")
        body = json.loads(answer["body"])
        left = sum(a["catching_up"] for a in body["agents"]) if kind == "overview" else body["catching_up"]
        listed = bool(body["agents"] if kind == "overview" else body["concepts"])
        return {"ms": took, "requests": calls[0], "catching_up": left, "listed": listed}

    first = ask()
    warm_runs = [ask() for _ in range(warm)]
    until_current = next((i + 1 for i, r in enumerate(warm_runs) if r["catching_up"] == 0), None)
    print(json.dumps({"first": first, "warm": warm_runs, "until_current": 0 if first["catching_up"] == 0
                      else until_current}))


def run_child(agent: str, mode: str, warm: int, extra: "list[str] | None" = None) -> dict:
    env = {**os.environ, "KNOWLEDGE_BUCKET": BUCKET, "STUDIO_ORIGIN": "http://127.0.0.1:8080",
           "POWERTOOLS_SERVICE_NAME": "bench-studio", "POWERTOOLS_LOG_LEVEL": "WARNING",
           "POWERTOOLS_METRICS_DISABLED": "true"}
    env.pop("SESSIONS_BUCKET", None)
    args = ["--child", agent, mode, str(warm)] if extra is None else ["--after-writes-child", *extra, str(warm)]
    out = harness.child(__spec__.name, *args, env=env, check=False)
    if out.returncode:
        raise SystemExit(f"child failed ({mode}, {agent}):\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def bench(sizes: list[int], runs: int, warm: int, settle: bool = True) -> list[dict]:
    """Per size and mode, `runs` fresh processes; `settle`: wait out the journal's grace after seeding
    (the smoke run does not: its warm pages may list the seeding, its figures are not read)."""
    import boto3

    from knowledge.store.concepts import ConceptStore
    from knowledge.store.journal import JOURNAL_GRACE_SECONDS
    from knowledge.store.keys import snapshot_key

    with moto("bench"):
        s3 = boto3.client("s3")
        s3.create_bucket(Bucket=BUCKET)
        s3.put_bucket_versioning(Bucket=BUCKET, VersioningConfiguration={"Status": "Enabled"})
        apply_journal_lifecycle(s3, BUCKET)
        store = ConceptStore(s3, BUCKET)
        rows = []
        for size in sizes:
            agent = f"agent-{size}"
            seed(store, agent, size)
            time.sleep(JOURNAL_GRACE_SECONDS + 1 if settle else 0)
            samples: dict[str, list[dict]] = {mode: [] for mode in MODES}
            for _ in range(runs):  # interleaved, so a noisy moment hurts every mode alike
                s3.delete_object(Bucket=BUCKET, Key=snapshot_key(TENANT, agent))
                samples["today's path"].append(run_child(agent, "today's path", warm))
                samples["cold, no snapshot"].append(run_child(agent, "cold, no snapshot", warm))  # writes it
                samples["cold, snapshot present"].append(run_child(agent, "cold, snapshot present", warm))
            today = statistics.median(s["first_ms"] for s in samples["today's path"])
            for mode in MODES:
                firsts = [s["first_ms"] for s in samples[mode]]
                warms = [ms for s in samples[mode] for ms in s["warm_ms"]]
                rows.append({
                    "concepts": size, "mode": mode, "runs": runs,
                    "first_p50_ms": statistics.median(firsts), "first_p95_ms": percentile(firsts, 0.95),
                    "first_requests": max(s["first_requests"] for s in samples[mode]),
                    "warm_p50_ms": statistics.median(warms) if warms else None,
                    "warm_p95_ms": percentile(warms, 0.95) if warms else None,
                    "warm_requests": max(s["warm_requests"] for s in samples[mode]),
                    "import_p50_ms": statistics.median(s["import_ms"] for s in samples[mode]),
                    "first_vs_today": statistics.median(firsts) / today,
                    "pages": sum(s["pages"] for s in samples[mode]),
                    "pages_listed": sum(s["pages_listed"] for s in samples[mode]),
                })
        return rows


def bench_after_writes(sizes: list[int], runs: int, warm: int, writes: int) -> list[dict]:
    import boto3

    from knowledge.curation.studio import Studio
    from knowledge.operation.snapshots import SnapshotPass
    from knowledge.store.concepts import ConceptStore
    from knowledge.store.keys import snapshot_key

    with moto("bench"):
        s3 = boto3.client("s3")
        s3.create_bucket(Bucket=BUCKET)
        s3.put_bucket_versioning(Bucket=BUCKET, VersioningConfiguration={"Status": "Enabled"})
        apply_journal_lifecycle(s3, BUCKET)
        store = ConceptStore(s3, BUCKET, max_workers=32)
        rows = []
        for size in sizes:
            tenant, agent = f"bench-{size}", f"agent-{size}"
            store.put_config(tenant, agent, "knowledge: {}\n", actor="operator:bench")
            concepts, _ = corpus(size)
            with ThreadPoolExecutor(max_workers=16) as pool:
                list(pool.map(lambda c, t=tenant, a=agent: store.create(t, a, c, actor="engine"), concepts))
            SnapshotPass(Studio(store), store).run(tenant)  # the snapshot, current before the writes

            def confirm(i: int, tenant: str = tenant, agent: str = agent, concepts: list = concepts,
                        size: int = size) -> None:
                name = concepts[i % size].name
                current = store.get(tenant, agent, name)
                store.replace(tenant, agent, current.concept.replace(occurrences=current.concept.occurrences + 1),
                              if_match=current.etag, actor="engine", reason="confirmed")

            started = time.perf_counter()
            with ThreadPoolExecutor(max_workers=16) as pool:  # round-robin: no two writers on one concept at once
                for lap in range(0, writes, size):
                    list(pool.map(confirm, range(lap, min(writes, lap + size))))
            written_s = time.perf_counter() - started
            stale = s3.get_object(Bucket=BUCKET, Key=snapshot_key(tenant, agent))["Body"].read()
            samples: dict[tuple[str, str], list[dict]] = {(st, k): [] for st in STATES for k in KINDS}
            pass_s = None
            for state in STATES:
                for _ in range(runs):
                    for kind in KINDS:
                        s3.put_object(Bucket=BUCKET, Key=snapshot_key(tenant, agent), Body=stale)
                        if state == STATES[2]:
                            began = time.perf_counter()
                            SnapshotPass(Studio(store), store).run(tenant)
                            pass_s = time.perf_counter() - began
                        samples[(state, kind)].append(run_child(agent, state, warm, [tenant, agent, state, kind]))
            for kind in KINDS:
                base = statistics.median(s["first"]["ms"] for s in samples[(STATES[0], kind)])
                for state in STATES:
                    got = samples[(state, kind)]
                    firsts = [s["first"]["ms"] for s in got]
                    warms = [w["ms"] for s in got for w in s["warm"]]
                    untils = [s["until_current"] for s in got]
                    rows.append({
                        "concepts": size, "writes": writes, "kind": kind, "state": state, "runs": runs,
                        "cold_p50_ms": statistics.median(firsts), "cold_p95_ms": percentile(firsts, 0.95),
                        "cold_requests": max(s["first"]["requests"] for s in got),
                        "cold_catching_up": max(s["first"]["catching_up"] for s in got),
                        "warm_p50_ms": statistics.median(warms), "warm_p95_ms": percentile(warms, 0.95),
                        "warm_requests": max(w["requests"] for s in got for w in s["warm"]),
                        "warm_calls_until_current": None if None in untils else max(untils),
                        "cold_vs_before": statistics.median(firsts) / base,
                        "writes_s": written_s, "snapshot_pass_s": pass_s,
                        "pages": sum(1 + len(s["warm"]) for s in got),
                        "pages_listed": sum(s["first"]["listed"] + sum(w["listed"] for w in s["warm"]) for s in got)})
        return rows


def print_after_writes(rows: list[dict]) -> None:
    head = (f"{'concepts':>8} {'call':<9} {'state':<24} {'cold p50':>9} {'p95':>7} {'S3 req':>6} {'behind':>6}  "
            f"{'warm p50':>8} {'p95':>7} {'S3 req':>6} {'until 0':>7}  {'vs before':>9}")
    print(head)
    print("-" * len(head))
    for r in rows:
        until = "-" if r["warm_calls_until_current"] is None else str(r["warm_calls_until_current"])
        print(f"{r['concepts']:>8} {r['kind']:<9} {r['state']:<24} {r['cold_p50_ms']:>7.0f}ms {r['cold_p95_ms']:>5.0f}ms "
              f"{r['cold_requests']:>6} {r['cold_catching_up']:>6}  {r['warm_p50_ms']:>6.0f}ms {r['warm_p95_ms']:>5.0f}ms "
              f"{r['warm_requests']:>6} {until:>7}  {r['cold_vs_before']:>8.2f}x")
    for size in dict.fromkeys(r["concepts"] for r in rows):
        r = next(r for r in rows if r["concepts"] == size)
        print(f"\n{size} concepts: {r['writes']} engine writes took {r['writes_s']:.1f} s; "
              f"the snapshot pass after them {r['snapshot_pass_s']:.1f} s", end="")
    print("\n\ncold: the call a fresh API process answers first; warm: the same call asked again in that process;"
          "\nbehind: the most changes a cold answer had not read (catching_up); until 0: the most warm calls "
          "before one answered\nwith nothing left (- : not within --warm); vs before: cold p50 over the "
          "no-budget baseline's.")


COLUMNS = [
    Column("concepts", 8, lambda r: str(r["concepts"])),
    Column(" mode", 25, lambda r: " " + r["mode"], left=True),
    Column("first p50", 10, lambda r: f"{r['first_p50_ms']:.0f}ms"),
    Column("p95", 8, lambda r: f"{r['first_p95_ms']:.0f}ms"),
    Column("S3 req", 7, lambda r: str(r["first_requests"])),
    Column("warm p50", 10, lambda r: f"{r['warm_p50_ms']:.1f}ms"),
    Column("p95", 7, lambda r: f"{r['warm_p95_ms']:.1f}ms"),
    Column("S3 req", 7, lambda r: str(r["warm_requests"])),
    Column("vs today", 9, lambda r: f"{r['first_vs_today']:.2f}x"),
    Column("import", 8, lambda r: f"{r['import_p50_ms']:.0f}ms"),
]


def print_rows(rows: list[dict]) -> None:
    print_table(COLUMNS, rows)
    print("\nfirst: the first page (50 rows) a fresh API process answers; warm: the same page asked again "
          "in that process;\nS3 req: the most requests any run made; vs today: first-page p50 over today's path's.")


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3], int(sys.argv[4]))
        return 0
    if len(sys.argv) > 1 and sys.argv[1] == "--after-writes-child":
        after_writes_child(*sys.argv[2:6], int(sys.argv[6]))
        return 0
    parser = harness.parser(__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 5000])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--warm", type=int, default=10)
    parser.add_argument("--after-writes", type=int, default=0,
                        help="measure list, search and overview after this many engine writes (issue 28)")
    args = parser.parse_args()
    if args.smoke:
        args.sizes, args.runs, args.warm = [50], 1, 1
        args.after_writes = args.after_writes and 60
    if args.runs < 1 or args.warm < 1 or any(size < 50 for size in args.sizes):
        parser.error("--runs and --warm must be at least 1, each size at least 50 (one page)")
    if args.after_writes:
        rows = bench_after_writes(args.sizes, args.runs, args.warm, args.after_writes)
        emit(rows, args.json, lambda: print_after_writes(rows))
    else:
        rows = bench(args.sizes, args.runs, args.warm, settle=not args.smoke)
        emit(rows, args.json, lambda: print_rows(rows))
    did_work("timed answers listed rows", sum(r["pages_listed"] for r in rows), sum(r["pages"] for r in rows),
             as_json=args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
