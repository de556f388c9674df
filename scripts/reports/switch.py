#!/usr/bin/env python3
"""How soon a knowledge.yaml switch holds in RetrieveFunction, per writer and case, against moto's server.

    ./run script reports.switch [--trials 5] [--json] [--smoke]

Writers: the studio's path (ConceptStore.put_config, which the studio API's PUT /config calls: it
adds a journal entry) and `aws s3 cp` (a plain PUT of the object, no journal entry). Cases:
`retrieve: false`, an empty file, a file that does not parse (an unknown key; `aws s3 cp` only: the
studio refuses it). Per trial, a warm container (the template's KNOWLEDGE_REFRESH_SECONDS, 5) is
asked every 0.1 s after a random wait, the switch is written, and the time until its first answer
with an empty block is taken; then a container started after the write is asked once. The table
gives p50, p95 and max against the 10 s the switch must hold within, and the refresh window.

The `distill:` rows: DistillFunction (the template's DISTILL_SWITCH_SECONDS default, 5) runs a pass over
due sessions whose model takes MODEL_SECONDS to answer; after a random wait the switch (`enabled:
false`, an empty file, one that does not parse) is written by either writer, and the time until the
pass stops is taken, with the model calls and proposals that came after the write; then a container
started after the write runs one pass (it must distil nothing).

The report ends with the switches that held within the 10 s, warm container or running pass. --smoke:
one trial of the first case per writer, with a 1 s refresh and a 1 s distill switch check.
"""

from __future__ import annotations

import io
import json
import os
import random
import statistics
import sys
import time
import uuid
from contextlib import redirect_stdout

from scripts.lib.harness import ROOT, did_work, parser

DEMO = ROOT / "devstack" / "knowledge_dev" / "demo"
T, A = "default", "store-support"
BOUND_SECONDS = 10.0
ON = (DEMO / "knowledge.yaml").read_text()
CASES = {"retrieve: false": ON.replace("retrieve: true", "retrieve: false"), "empty file": "",
         "does not parse": ON.replace("top_k: 5", "topk: 5")}
ASK = {"tenant": T, "agent": A, "session_id": "sess_switch",
       "message": "Moro em Campinas, CEP 13084-100. O frete é grátis? Em quantos dias chega?"}


def main() -> int:
    parser_ = parser(__doc__)
    parser_.add_argument("--trials", type=int, default=5)
    args = parser_.parse_args()
    cases = dict(list(CASES.items())[:1]) if args.smoke else CASES
    distill_cases = dict(list(DISTILL_CASES.items())[:1]) if args.smoke else DISTILL_CASES
    if args.smoke:  # the shortest windows: the smoke run checks the path, not the template's timing
        args.trials = 1
        os.environ.update(KNOWLEDGE_REFRESH_SECONDS="1")

    from knowledge_dev.handlers import handler_environment, load_handler
    from knowledge_dev.poller import LambdaContext
    from scripts.lib.harness import moto, percentile

    rng = random.Random(26)
    rows = []
    with moto("switch-report"):
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
                for case, text in cases.items():
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
                                 "new_container_first_call_s": round(statistics.median(cold_times), 2),
                                 "within_bound": sum(t <= BOUND_SECONDS for t in warm_times)})
            switch_seconds = 1.0 if args.smoke else DISTILL_SWITCH_SECONDS
            distill = distill_rows(args.trials, rng, store, s3, bucket, write, distill_cases, switch_seconds)
    if args.json:
        print(json.dumps({"refresh_seconds": refresh, "rows": rows, "distill_rows": distill}, indent=2))
    else:
        print_report(refresh, rows, distill, switch_seconds)
    held = rows + distill
    did_work("switches that held within 10 s (warm container, running pass)", sum(r["within_bound"] for r in held),
             sum(r["trials"] for r in held), as_json=args.json)
    return 0


def print_report(refresh: float, rows: list[dict], distill: list[dict], switch_seconds: float) -> None:
    print(f"KNOWLEDGE_REFRESH_SECONDS {refresh:g}; the switch must hold within {BOUND_SECONDS:g} s\n")
    print(f"{'writer':<10} {'case':<16} {'warm p50 s':>10} {'p95 s':>7} {'max s':>7} {'max/10s':>8} "
          f"{'new: obeys 1st call':>20} {'1st call s':>11}")
    for row in rows:
        print(f"{row['writer']:<10} {row['case']:<16} {row['warm_p50_s']:>10} {row['warm_p95_s']:>7} "
              f"{row['warm_max_s']:>7} {row['max_vs_bound']:>8} {row['new_container_obeys_first_call']:>20} "
              f"{row['new_container_first_call_s']:>11}")
    print(f"\nDistillFunction: DISTILL_SWITCH_SECONDS {switch_seconds:g}, the model answers in "
          f"{MODEL_SECONDS:g} s; the time until a running pass stops after the write (calls and answers after it: "
          "sums over the trials)\n")
    print(f"{'writer':<10} {'case':<16} {'stops p50 s':>11} {'p95 s':>7} {'max s':>7} {'max/10s':>8} "
          f"{'calls after':>12} {'written after':>14} {'new: obeys 1st':>15}")
    for row in distill:
        print(f"{row['writer']:<10} {row['case']:<16} {row['stops_p50_s']:>11} {row['stops_p95_s']:>7} "
              f"{row['stops_max_s']:>7} {row['max_vs_bound']:>8} {row['model_calls_after_write']:>12} "
              f"{row['answers_written_after_write']:>14} {row['new_container_obeys_first_pass']:>15}")


DISTILL_SWITCH_SECONDS = 5.0  # the template's default (settings.distill_switch_seconds)
MODEL_SECONDS = 0.4  # each model answer
DISTILL_TIMEOUT_MS = 900_000  # the template's DistillFunction timeout
DISTILL_ON = "knowledge:\n  extract: false\ndistill:\n  idle_hours: 6\n  min_messages: 3\n"
DISTILL_CASES = {"enabled: false": DISTILL_ON.replace("  idle_hours", "  enabled: false\n  idle_hours"),
                 "empty file": "", "does not parse": DISTILL_ON.replace("min_messages", "min_mesages")}
DUE_SESSIONS = 40  # more than a pass gets through before the switch is written


def distill_rows(trials, rng, store, s3, bucket, write, cases=None, switch_seconds=None) -> list[dict]:
    """A running distill pass stopped by a switch, per writer and case (see the module's docstring)."""
    import threading
    from datetime import datetime, timedelta, timezone

    from facts.sessions import record_turn
    from knowledge.format.turn import Turn
    from knowledge.store.archive import TurnArchive
    from knowledge_dev.handlers import handler_environment, load_handler
    from knowledge_dev.poller import LambdaContext
    from knowledge_dev.scripted_model import ScriptedModel
    from scripts.lib.harness import percentile

    cases = DISTILL_CASES if cases is None else cases
    switch_seconds = DISTILL_SWITCH_SECONDS if switch_seconds is None else switch_seconds

    def pass_context():
        return LambdaContext("facts-distill", timeout_ms=DISTILL_TIMEOUT_MS)

    asked: list[float] = []
    answer = json.dumps([{"name": "pagamento_preferido", "value": "Pix", "evidence": [1]}])

    def respond(request):
        asked.append(time.perf_counter())
        time.sleep(MODEL_SECONDS)
        return answer

    rows = []
    with ScriptedModel(respond) as model:
        for writer in ("studio", "aws s3 cp"):
            for case, text in cases.items():
                if writer == "studio" and case == "does not parse":
                    continue
                stops, after_calls, after_proposals, cold_ok = [], 0, 0, 0
                for trial in range(trials):
                    sessions = f"switch-sessions-{uuid.uuid4().hex[:8]}"
                    s3.create_bucket(Bucket=sessions)
                    env = {"SESSIONS_BUCKET": sessions, "FACTS_KEY": "k" * 48, "UTILITY_MODEL": "openai:distiller",
                           "OPENAI_BASE_URL": model.base_url, "DISTILL_SWITCH_SECONDS": str(switch_seconds)}
                    start = datetime.now(timezone.utc) - timedelta(hours=8)
                    for n in range(DUE_SESSIONS):
                        for i, content in enumerate(("quero trocar o tenis", "prefiro pagar no pix sempre")):
                            turn = Turn(tenant=T, agent=A, session_id=f"sess_{n:03d}", turn_id=f"turn_{i}",
                                        completed_at=start + timedelta(minutes=n + i), customer_id=f"cust-{n:04d}",
                                        messages=[{"role": "user", "content": content},
                                                  {"role": "assistant", "content": "Anotado."}])
                            TurnArchive(s3, sessions).put(turn)
                            record_turn(s3, sessions, turn)
                    write("aws s3 cp", DISTILL_ON)
                    with handler_environment(**env):
                        handler = load_handler("distill", module_name=f"switch_distill_{uuid.uuid4().hex[:6]}")
                        written: list[float] = []

                        def pull():
                            time.sleep(rng.uniform(1.0, 3.0))  # the pass is under way
                            write(writer, text)
                            written.append(time.perf_counter())

                        puller = threading.Thread(target=pull)
                        asked.clear()
                        puller.start()
                        with redirect_stdout(io.StringIO()):
                            report = handler.lambda_handler({}, pass_context())
                        ended = time.perf_counter()
                        puller.join()
                        stops.append(ended - written[0])
                        after_calls += sum(1 for at in asked if at > written[0])
                        # Sessions whose answer was written although it came back after the switch was written.
                        answered_before = sum(1 for at in asked if at + MODEL_SECONDS <= written[0])
                        after_proposals += max(0, report.get("distilled", 0) - answered_before)
                        with redirect_stdout(io.StringIO()):
                            cold = load_handler("distill", module_name=f"switch_distill_{uuid.uuid4().hex[:6]}")
                            cold_ok += cold.lambda_handler({}, pass_context()).get("distilled") == 0
                rows.append({"writer": writer, "case": case, "trials": trials,
                             "stops_p50_s": round(statistics.median(stops), 2),
                             "stops_p95_s": round(percentile(stops, 0.95), 2), "stops_max_s": round(max(stops), 2),
                             "max_vs_bound": round(max(stops) / BOUND_SECONDS, 2),
                             "model_calls_after_write": after_calls, "answers_written_after_write": after_proposals,
                             "new_container_obeys_first_pass": f"{cold_ok}/{trials}",
                             "within_bound": sum(t <= BOUND_SECONDS for t in stops)})
    return rows


if __name__ == "__main__":
    sys.exit(main())
