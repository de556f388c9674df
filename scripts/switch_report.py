#!/usr/bin/env python3
"""How soon a knowledge.yaml switch holds in RetrieveFunction, per writer and case, against moto's server.

    .venv/bin/python scripts/switch_report.py [--trials 5] [--json]

Writers: the studio's path (ConceptStore.put_config, which the studio API's PUT /config calls: it
adds a journal entry) and `aws s3 cp` (a plain PUT of the object, no journal entry). Cases:
`retrieve: false`, an empty file, a file that does not parse (an unknown key; `aws s3 cp` only: the
studio refuses it). Per trial, a warm container (the template's KNOWLEDGE_REFRESH_SECONDS, 5) is
asked every 0.1 s after a random wait, the switch is written, and the time until its first answer
with an empty block is taken; then a container started after the write is asked once. The table
gives p50, p95 and max against the 10 s the switch must hold within, and the refresh window.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import statistics
import sys
import time
import uuid
from contextlib import redirect_stdout
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "devstack" / "knowledge_dev" / "demo"
T, A = "default", "store-support"
BOUND_SECONDS = 10.0
ON = (DEMO / "knowledge.yaml").read_text()
CASES = {"retrieve: false": ON.replace("retrieve: true", "retrieve: false"), "empty file": "",
         "does not parse": ON.replace("top_k: 5", "topk: 5")}
ASK = {"tenant": T, "agent": A, "session_id": "sess_switch",
       "message": "Moro em Campinas, CEP 13084-100. O frete é grátis? Em quantos dias chega?"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    from knowledge_dev.handlers import handler_environment, load_handler
    from knowledge_dev.local_aws import moto_server, percentile
    from knowledge_dev.poller import LambdaContext

    rng = random.Random(26)
    rows = []
    with moto_server("switch-report"):
        import boto3

        from knowledge.format.concept import parse
        from knowledge.store.concepts import ConceptStore
        from knowledge.store.keys import config_key
        from shared.aws import client

        setup = boto3.client("s3")
        bucket = "switch-knowledge"
        setup.create_bucket(Bucket=bucket)
        setup.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
        boto3.client("events").create_event_bus(Name="switch-bus")
        env = {"KNOWLEDGE_BUCKET": bucket, "EVENT_BUS_NAME": "switch-bus", "POWERTOOLS_LOG_LEVEL": "WARNING"}
        with handler_environment(**env):
            s3 = client("s3")
            store = ConceptStore(s3, bucket)
            store.put_config(T, A, ON, actor="operator:report")
            for path in sorted(DEMO.glob("*.md")):
                store.create(T, A, parse(path.read_text()), actor="engine")

            def new_container():
                return load_handler("retrieve", module_name=f"switch_retrieve_{uuid.uuid4().hex[:6]}")

            def block(handler) -> str:
                with redirect_stdout(io.StringIO()):  # the EMF lines
                    return handler.lambda_handler(ASK, LambdaContext("knowledge-retrieve"))["block"]

            def write(writer: str, text: str) -> None:
                if writer == "studio":
                    etag = s3.head_object(Bucket=bucket, Key=config_key(T, A))["ETag"]
                    store.put_config(T, A, text, actor="operator:report", if_match=etag)
                else:
                    s3.put_object(Bucket=bucket, Key=config_key(T, A), Body=text.encode())

            refresh = float(os.environ.get("KNOWLEDGE_REFRESH_SECONDS", "5"))
            for writer in ("studio", "aws s3 cp"):
                for case, text in CASES.items():
                    if writer == "studio" and case == "does not parse":
                        continue
                    warm_times, cold_ok, cold_times = [], 0, []
                    for _ in range(args.trials):
                        write("aws s3 cp", ON)
                        warm = new_container()
                        while not block(warm):  # on, and warm
                            time.sleep(0.1)
                        time.sleep(rng.uniform(0, refresh))  # anywhere in the refresh window
                        write(writer, text)
                        written = time.perf_counter()
                        while block(warm) and time.perf_counter() - written < 400:
                            time.sleep(0.1)
                        warm_times.append(time.perf_counter() - written)
                        started = time.perf_counter()
                        cold_ok += block(new_container()) == ""
                        cold_times.append(time.perf_counter() - started)
                    rows.append({"writer": writer, "case": case, "trials": args.trials,
                                 "warm_p50_s": round(statistics.median(warm_times), 2),
                                 "warm_p95_s": round(percentile(warm_times, 0.95), 2),
                                 "warm_max_s": round(max(warm_times), 2),
                                 "max_vs_bound": round(max(warm_times) / BOUND_SECONDS, 2),
                                 "new_container_obeys_first_call": f"{cold_ok}/{args.trials}",
                                 "new_container_first_call_s": round(statistics.median(cold_times), 2)})
    if args.json:
        print(json.dumps({"refresh_seconds": refresh, "rows": rows}, indent=2))
        return 0
    print(f"KNOWLEDGE_REFRESH_SECONDS {refresh:g}; the switch must hold within {BOUND_SECONDS:g} s\n")
    print(f"{'writer':<10} {'case':<16} {'warm p50 s':>10} {'p95 s':>7} {'max s':>7} {'max/10s':>8} "
          f"{'new: obeys 1st call':>20} {'1st call s':>11}")
    for row in rows:
        print(f"{row['writer']:<10} {row['case']:<16} {row['warm_p50_s']:>10} {row['warm_p95_s']:>7} "
              f"{row['warm_max_s']:>7} {row['max_vs_bound']:>8} {row['new_container_obeys_first_call']:>20} "
              f"{row['new_container_first_call_s']:>11}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
