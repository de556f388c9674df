#!/usr/bin/env python3
"""What an import costs, through the real `knowledge import` and RetrieveFunction against moto's server.

    ./run script reports.imports [--faq-rows 500] [--concepts 2000] [--json] [--smoke]

Two imports into agents that already have a knowledge.yaml: an FAQ (CSV, Portuguese, long answers,
accents, and the bad rows a store's sheet has: faq-loja.csv's duplicate question, empty answer, a
question that slugs to nothing and an answer over the body's 16 KB) and an export of another agent
(`knowledge export`, synthetic concepts). Each is then run again (nothing to write). Prints per run:
the time, concepts per second, S3 requests per concept by operation (counted with botocore's
before-send hook on the client the code uses), and the time per concept against the floor measured
in the same run — one conditional PUT and one journal PUT per object, through the same pool width.

Then retrieval, after each first import: a RetrieveFunction container warmed on the agent before the
import is asked, every 0.2 s, a question one imported concept answers until that concept is in the
answer (it learns of it from the journal at its next KNOWLEDGE_REFRESH_SECONDS refresh, never the
5-minute sweep); a container started after the import is asked the same until it answers it (its
cold start lists and fetches every concept within its fetch budget); then 20 more calls (p50/p95).
It ends with how many of those containers answered with the imported concept.
"""

from __future__ import annotations

import csv
import io
import json
import statistics
import sys
import tempfile
import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

from scripts.lib.harness import ROOT, did_work, moto, parser, percentile
from scripts.lib.synthetic_corpus import corpus

FAQ = ROOT / "tests" / "data" / "imports" / "faq-loja.csv"
DEMO_CONFIG = ROOT / "devstack" / "knowledge_dev" / "demo" / "knowledge.yaml"
T = "default"
QUALIFIERS = ["", "no aplicativo", "pelo site", "para móveis", "para eletrodomésticos", "em Recife", "em Manaus",
              "em Curitiba", "em Porto Alegre", "em Salvador", "em Fortaleza", "em Belo Horizonte", "no Rio de Janeiro",
              "em Campinas", "para pessoa jurídica", "na Black Friday", "no Natal", "para presente", "em promoção",
              "para itens de outlet", "para produtos personalizados", "para kits e combos", "na loja física",
              "com cupom", "no primeiro pedido", "para clientes do programa de pontos", "em pedidos acima de R$ 500",
              "para encomendas", "com entrega agendada", "para o interior de São Paulo"]


def faq_rows(n: int) -> list[list[str]]:
    """n rows: faq-loja.csv's bad ones as they are, then its good questions under each qualifier."""
    with FAQ.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.reader(handle))[1:]
    seen, good, bad = set(), [], []
    for question, answer in rows:
        if question in seen or not answer or not any(c.isalnum() for c in question) or len(answer) > 16_000:
            bad.append([question, answer])
        else:
            seen.add(question)
            good.append([question, answer])
    out = list(bad)
    for qualifier in QUALIFIERS:
        for question, answer in good:
            if len(out) >= n:
                return out
            if qualifier:
                asked = f"{question.rstrip('?')} {qualifier}?"
                told = f"{answer}\nVale também {qualifier}: as mesmas condições, confirmadas no carrinho antes do pagamento."
            else:
                asked, told = question, answer
            out.append([asked, told])
    return out


def write_faq(folder: Path, n: int) -> tuple[Path, int]:
    rows = faq_rows(n)
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["question", "answer"])
    writer.writerows(rows)
    path = folder / "faq.csv"
    path.write_text(buffer.getvalue(), encoding="utf-8")
    return path, len(rows)


class Requests:
    """S3 requests by operation, from the client every part of the code shares (shared.aws.client)."""

    def __init__(self, s3):
        self.counts: Counter = Counter()
        s3.meta.events.register("before-send.s3", self._count)

    def _count(self, event_name: str, **_):
        self.counts[event_name.rsplit(".", 1)[-1]] += 1

    def since(self, before: Counter) -> Counter:
        return self.counts - before


def run_import(argv: list[str]) -> tuple[int, str, float]:
    from knowledge_cli.main import main

    out = io.StringIO()
    started = time.perf_counter()
    with redirect_stdout(out), redirect_stderr(io.StringIO()):  # the refused rows' lines: counted in the summary
        code = main(["import", *argv])
    return code, out.getvalue(), time.perf_counter() - started


def floor_seconds(s3, bucket: str, n: int = 300, workers: int = 8) -> float:
    """Seconds per object of the floor an import's create pays: a conditional PUT and an empty journal PUT."""
    def put(i: int) -> None:
        s3.put_object(Bucket=bucket, Key=f"floor/{i}.md", Body=b"x" * 1500, IfNoneMatch="*")
        s3.put_object(Bucket=bucket, Key=f"floor-journal/{i}", Body=b"", IfNoneMatch="*")

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        list(pool.map(put, range(n)))
    return (time.perf_counter() - started) / n


def main() -> int:
    parser_ = parser(__doc__)
    parser_.add_argument("--faq-rows", type=int, default=500)
    parser_.add_argument("--concepts", type=int, default=2000)
    args = parser_.parse_args()
    if args.smoke:
        args.faq_rows, args.concepts = 20, 30

    from knowledge_dev.handlers import handler_environment, load_handler

    with moto("import-report"), tempfile.TemporaryDirectory() as tmp:
        import boto3

        from knowledge.store.concepts import ConceptStore
        from shared.aws import client

        setup = boto3.client("s3")
        knowledge, sessions, bus = "report-knowledge", "report-sessions", "report-bus"
        setup.create_bucket(Bucket=knowledge)
        setup.put_bucket_versioning(Bucket=knowledge, VersioningConfiguration={"Status": "Enabled"})
        setup.create_bucket(Bucket=sessions)
        boto3.client("events").create_event_bus(Name=bus)
        env = {"KNOWLEDGE_BUCKET": knowledge, "SESSIONS_BUCKET": sessions, "EVENT_BUS_NAME": bus,
               "KNOWLEDGE_OPERATOR": "report", "POWERTOOLS_LOG_LEVEL": "WARNING"}
        with handler_environment(**env):
            s3 = client("s3")
            requests = Requests(s3)
            store = ConceptStore(s3, knowledge, max_workers=32)
            for agent in ("faq-agent", "site-chat", "store-support"):
                store.put_config(T, agent, DEMO_CONFIG.read_text(), actor="operator:report")
            concepts, _ = corpus(args.concepts)
            with ThreadPoolExecutor(max_workers=16) as pool:
                list(pool.map(lambda c: store.create(T, "site-chat", c, actor="engine"), concepts))
            export = Path(tmp) / "export"
            with redirect_stdout(io.StringIO()):
                from knowledge_cli.main import main as cli

                assert cli(["export", "--agent", "site-chat", "--out", str(export)]) == 0
            faq, rows = write_faq(Path(tmp), args.faq_rows)
            floor = floor_seconds(s3, sessions, 30 if args.smoke else 300)

            from knowledge_dev.poller import LambdaContext as Context

            def call(handler, event):
                """One invocation with a fresh context, its EMF lines (stdout) kept out of the table."""
                with redirect_stdout(io.StringIO()):
                    return handler.lambda_handler(event, Context("knowledge-retrieve"))

            def until_found(handler, event, name, limit=120.0):
                """Seconds and calls until `handler` answers `event` with concept `name` (None: never, within `limit`)."""
                started, calls, first = time.perf_counter(), 0, None
                while time.perf_counter() - started < limit:
                    calls += 1
                    answer = call(handler, event)
                    first = first if first is not None else time.perf_counter() - started
                    if name in [c["name"] for c in answer["concepts"]]:
                        return {"seconds": round(time.perf_counter() - started, 2), "calls": calls,
                                "first_call_s": round(first, 2)}
                    time.sleep(0.2)
                return {"seconds": None, "calls": calls, "first_call_s": round(first or 0, 2)}

            target = next(c for c in concepts[len(concepts) // 2:] if "paulo" not in c.name)
            asks = {"faq-agent": ({"tenant": T, "agent": "faq-agent", "session_id": "sess_report",
                                   "message": "Vocês emitem nota fiscal em nome de empresa com CNPJ?"},
                                  "voces-emitem-nota-fiscal"),
                    "store-support": ({"tenant": T, "agent": "store-support", "session_id": "sess_report",
                                       "message": f"{target.name.rsplit('-', 1)[0].replace('-', ' ')} "
                                                  f"{target.description}"}, target.name)}
            warmed = {}
            for agent, (event, _) in asks.items():  # a container warm on each agent before its import
                warmed[agent] = load_handler("retrieve", module_name=f"report_retrieve_{uuid.uuid4().hex[:6]}")
                call(warmed[agent], event)

            table, retrieval = [], {}
            runs = [(f"FAQ, {rows} rows", "faq-agent", faq), ("FAQ again", "faq-agent", faq),
                    (f"export, {len(concepts)} concepts", "store-support", export),
                    ("export again", "store-support", export)]
            for label, agent, path in runs:
                before = Counter(requests.counts)
                code, out, seconds = run_import(["--agent", agent, str(path)])
                summary = out.strip().splitlines()[-1]
                n = sum(1 for line in out.splitlines() if line.split(" ", 1)[0] in
                        ("created", "changed", "unchanged", "skipped"))
                spent = requests.since(before)
                table.append({"run": label, "exit": code, "concepts": n, "seconds": round(seconds, 2),
                              "per_second": round(n / seconds, 1) if seconds else None,
                              "s3_per_concept": round(sum(spent.values()) / max(n, 1), 2),
                              "by_operation": {op: round(count / max(n, 1), 2) for op, count in sorted(spent.items())},
                              "vs_floor": round(seconds / max(n, 1) / floor, 2), "summary": summary})
                if agent not in retrieval:
                    event, name = asks[agent]
                    warm_found = until_found(warmed[agent], event, name)
                    fresh = load_handler("retrieve", module_name=f"report_retrieve_new_{uuid.uuid4().hex[:6]}")
                    new_found = until_found(fresh, event, name)
                    timings = []
                    for _ in range(20):
                        started = time.perf_counter()
                        call(fresh, event)
                        timings.append((time.perf_counter() - started) * 1000)
                    retrieval[agent] = {"label": label, "warm": warm_found, "new": new_found,
                                        "ms_p50": round(statistics.median(timings), 1),
                                        "ms_p95": round(percentile(timings, 0.95), 1)}

    result = {"floor_ms_per_object": round(floor * 1000, 2), "imports": table, "retrieval": retrieval}
    if args.json:
        print(json.dumps(result, indent=2, ensure_ascii=False))
    else:
        print_report(result)
    containers = [row[when] for row in retrieval.values() for when in ("warm", "new")]
    did_work("retrieve containers (warm, new) answered with an imported concept",
             sum(c["seconds"] is not None for c in containers), len(containers), as_json=args.json)
    return 0


def print_report(result: dict) -> None:
    floor, table, retrieval = result["floor_ms_per_object"] / 1000, result["imports"], result["retrieval"]
    print(f"floor: one conditional PUT + one journal PUT per object, 8 in flight: {floor * 1000:.2f} ms/object\n")
    print(f"{'run':<22} {'exit':>4} {'concepts':>8} {'seconds':>8} {'per s':>7} {'S3/concept':>10} {'x floor':>8}  by operation")
    for row in table:
        ops = ", ".join(f"{op} {count}" for op, count in row["by_operation"].items())
        print(f"{row['run']:<22} {row['exit']:>4} {row['concepts']:>8} {row['seconds']:>8} {row['per_second']:>7} "
              f"{row['s3_per_concept']:>10} {row['vs_floor']:>8}  {ops}")
        print(f"{'':<22}  {row['summary']}")
    print("\nretrieval after the first import (RetrieveFunction, KNOWLEDGE_REFRESH_SECONDS 5)")
    print(f"{'import':<22} {'warm: found after':>18} {'calls':>6} {'new: 1st call s':>16} {'found after':>12} "
          f"{'calls':>6} {'then p50 ms':>12} {'p95 ms':>8}")
    for agent, row in retrieval.items():
        warm, new = row["warm"], row["new"]
        print(f"{row['label']:<22} {warm['seconds']!s:>18} {warm['calls']:>6} {new['first_call_s']:>16} "
              f"{new['seconds']!s:>12} {new['calls']:>6} {row['ms_p50']:>12} {row['ms_p95']:>8}")


if __name__ == "__main__":
    sys.exit(main())
