#!/usr/bin/env python3
"""The studio's list at scale, measured: the first page a fresh StudioApiFunction answers.

    .venv/bin/python scripts/bench_studio_list.py [--sizes 1000 5000] [--runs 5] [--warm 10] [--json]

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
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from knowledge_dev.local_aws import apply_journal_lifecycle, moto_server, percentile

ROOT = Path(__file__).resolve().parents[1]
BUCKET, TENANT = "bench-studio", "default"
MODES = ("cold, snapshot present", "cold, no snapshot", "today's path")
CLAIMS = {"sub": "bench-operator", "cognito:groups": "[default]"}


def seed(store, agent: str, size: int) -> None:
    sys.path.insert(0, str(ROOT / "scripts"))
    from synthetic_corpus import corpus

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


def event(agent: str) -> dict:
    base = json.loads((ROOT / "events" / "studio-list-conflicts.json").read_text())
    path = f"/tenants/{TENANT}/agents/{agent}/concepts"
    base["rawPath"] = base["requestContext"]["http"]["path"] = path
    base["queryStringParameters"] = {"limit": "50"}
    base["rawQueryString"] = "limit=50"
    base["requestContext"]["authorizer"]["jwt"]["claims"] = CLAIMS
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
                      "warm_ms": [ms for ms, _ in warm_runs], "warm_requests": warm_runs[0][1] if warm_runs else 0}))


def run_child(agent: str, mode: str, warm: int) -> dict:
    env = {**os.environ, "KNOWLEDGE_BUCKET": BUCKET, "STUDIO_ORIGIN": "http://127.0.0.1:8080",
           "POWERTOOLS_SERVICE_NAME": "bench-studio", "POWERTOOLS_LOG_LEVEL": "WARNING",
           "POWERTOOLS_METRICS_DISABLED": "true", "PYTHONPATH": os.pathsep.join(
               [str(ROOT / "scripts"), os.environ.get("PYTHONPATH", "")])}
    env.pop("SESSIONS_BUCKET", None)
    out = subprocess.run([sys.executable, __file__, "--child", agent, mode, str(warm)], env=env,
                         capture_output=True, text=True)
    if out.returncode:
        raise SystemExit(f"child failed ({mode}, {agent}):\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def bench(sizes: list[int], runs: int, warm: int) -> list[dict]:
    import boto3

    from knowledge.store.concepts import ConceptStore
    from knowledge.store.journal import JOURNAL_GRACE_SECONDS
    from knowledge.store.keys import snapshot_key

    with moto_server("bench"):
        s3 = boto3.client("s3")
        s3.create_bucket(Bucket=BUCKET)
        s3.put_bucket_versioning(Bucket=BUCKET, VersioningConfiguration={"Status": "Enabled"})
        apply_journal_lifecycle(s3, BUCKET)
        store = ConceptStore(s3, BUCKET)
        rows = []
        for size in sizes:
            agent = f"agent-{size}"
            seed(store, agent, size)
            time.sleep(JOURNAL_GRACE_SECONDS + 1)
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
                })
        return rows


def print_table(rows: list[dict]) -> None:
    head = (f"{'concepts':>8}  {'mode':<24} {'first p50':>10} {'p95':>8} {'S3 req':>7}  {'warm p50':>9} {'p95':>7} "
            f"{'S3 req':>7}  {'vs today':>8}  {'import':>7}")
    print(head)
    print("-" * len(head))
    for r in rows:
        print(f"{r['concepts']:>8}  {r['mode']:<24} {r['first_p50_ms']:>8.0f}ms {r['first_p95_ms']:>6.0f}ms "
              f"{r['first_requests']:>7}  {r['warm_p50_ms']:>7.1f}ms {r['warm_p95_ms']:>5.1f}ms {r['warm_requests']:>7}  "
              f"{r['first_vs_today']:>7.2f}x  {r['import_p50_ms']:>5.0f}ms")
    print("\nfirst: the first page (50 rows) a fresh API process answers; warm: the same page asked again "
          "in that process;\nS3 req: the most requests any run made; vs today: first-page p50 over today's path's.")


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3], int(sys.argv[4]))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 5000])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--warm", type=int, default=10)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.runs < 1 or args.warm < 1 or any(size < 50 for size in args.sizes):
        parser.error("--runs and --warm must be at least 1, each size at least 50 (one page)")
    rows = bench(args.sizes, args.runs, args.warm)
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        print_table(rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
