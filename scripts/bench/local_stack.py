#!/usr/bin/env python3
"""The local stack at scale, measured: memory over time, start and stop, with N concepts.

    ./run script bench.local_stack [--concepts 5000] [--minutes 4] [--every 10] [--json] [--smoke]

Starts `./run local` (python -m knowledge_dev.stack, a real process, its default 2-second mirror)
on a fresh data folder, writes `--concepts` synthetic concepts into it through the store (each a
version and a journal entry, as the engine writes them), then prints the stack's RSS and CPU
every `--every` seconds for `--minutes` while it sits idle; then stops it (SIGTERM, timed: the
final save), starts it again on the same data (timed until its banner: the restore), checks
that every concept came back, and watches RSS a little longer. A table at the end, then how many
of the concepts written came back after the restart (fewer fails the run).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from scripts.lib.harness import ROOT, did_work, emit, parser
from scripts.lib.synthetic_corpus import corpus

READY = "Ctrl-C stops the stack"
TICK = os.sysconf("SC_CLK_TCK")


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


class Stack:
    def __init__(self, data: Path, state: Path):
        from knowledge_dev.local_aws import free_port

        # Every port free: another stack, or a bench's Lambda endpoint, may hold the defaults.
        self.port, self.model_port = free_port(), free_port()
        self.studio_port, self.lambda_port = free_port(), free_port()
        self.data = data
        self.env = {**os.environ, "KNOWLEDGE_LOCAL_STATE": str(state), "PYTHONUNBUFFERED": "1",
                    "POWERTOOLS_LOG_LEVEL": "WARNING", "KNOWLEDGE_LOCAL_DISTILL_EVERY": "3600"}
        for key in ("AWS_ENDPOINT_URL", "KNOWLEDGE_BUCKET", "SESSIONS_BUCKET", "UTILITY_MODEL", "OPENAI_BASE_URL"):
            self.env.pop(key, None)
        self.output: list[str] = []

    def start(self) -> float:
        started = time.perf_counter()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "knowledge_dev.stack", "--port", str(self.port), "--data", str(self.data),
             "--model-port", str(self.model_port), "--studio-port", str(self.studio_port),
             "--lambda-port", str(self.lambda_port)],
            cwd=ROOT, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        text = ""
        while READY not in text:
            line = self.process.stdout.readline()
            if not line and self.process.poll() is not None:
                raise SystemExit(f"the stack exited early:\n{text[-3000:]}")
            text += line
        took = time.perf_counter() - started
        threading.Thread(target=lambda: [self.output.append(x) for x in self.process.stdout], daemon=True).start()
        return took

    def stop(self) -> float:
        started = time.perf_counter()
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(timeout=600)
        return time.perf_counter() - started

    def store(self):
        import boto3

        from knowledge.store.concepts import ConceptStore

        state = json.loads(Path(self.env["KNOWLEDGE_LOCAL_STATE"]).read_text())["env"]
        s3 = boto3.client("s3", endpoint_url=state["AWS_ENDPOINT_URL"], region_name="us-east-1",
                          aws_access_key_id="local", aws_secret_access_key="local")
        return ConceptStore(s3, state["KNOWLEDGE_BUCKET"]), s3, state["KNOWLEDGE_BUCKET"]


def watch(stack: Stack, seconds: float, every: float, label: str, samples: list[dict]) -> None:
    pid, begin = stack.process.pid, time.monotonic()
    last_cpu, last_at = cpu_seconds(pid), time.monotonic()
    while True:
        time.sleep(every)
        now, cpu = time.monotonic(), cpu_seconds(pid)
        sample = {"phase": label, "t": round(now - begin), "rss_mb": round(rss_mb(pid)),
                  "cpu_pct": round(100 * (cpu - last_cpu) / (now - last_at))}
        samples.append(sample)
        print(f"  {label:<10} t={sample['t']:>4}s  rss {sample['rss_mb']:>6} MB  cpu {sample['cpu_pct']:>3} %",
              flush=True)
        last_cpu, last_at = cpu, now
        if now - begin >= seconds:
            return


def main() -> int:
    args_parser = parser(__doc__)
    args_parser.add_argument("--concepts", type=int, default=5000)
    args_parser.add_argument("--minutes", type=float, default=4.0)
    args_parser.add_argument("--every", type=float, default=10.0)
    args = args_parser.parse_args()
    if args.smoke:
        args.concepts, args.minutes, args.every = 20, 0.02, 0.5

    with tempfile.TemporaryDirectory(prefix="bench-local-") as tmp:
        stack = Stack(Path(tmp) / "data", Path(tmp) / "stack.json")
        first_start = stack.start()
        store, _, _ = stack.store()
        concepts, _ = corpus(args.concepts)
        began = time.perf_counter()
        with ThreadPoolExecutor(max_workers=16) as pool:
            list(pool.map(lambda c: store.create("default", "bench-agent", c, actor="engine"), concepts))
        written = time.perf_counter() - began
        print(f"started in {first_start:.1f} s; wrote {len(concepts)} concepts in {written:.1f} s", flush=True)
        samples: list[dict] = []
        watch(stack, args.minutes * 60, args.every, "idle", samples)
        stop_first = stack.stop()
        print(f"stopped in {stop_first:.1f} s", flush=True)
        restart = stack.start()
        store, _, _ = stack.store()
        back = len(store.list("default", "bench-agent"))
        print(f"restarted in {restart:.1f} s with {back} concepts", flush=True)
        watch(stack, min(60.0, args.minutes * 60), args.every, "restarted", samples)
        stop_second = stack.stop()
        idle = [s for s in samples if s["phase"] == "idle"]
        row = {"concepts": args.concepts, "first_start_s": first_start, "write_s": written,
               "rss_start_mb": idle[0]["rss_mb"], "rss_end_mb": idle[-1]["rss_mb"],
               "rss_growth_mb_per_min": (idle[-1]["rss_mb"] - idle[0]["rss_mb"]) / max(1e-9, (idle[-1]["t"] - idle[0]["t"]) / 60),
               "cpu_idle_pct": sorted(s["cpu_pct"] for s in idle)[len(idle) // 2],
               "stop_s": stop_first, "restart_s": restart, "restored": back, "stop_after_restart_s": stop_second}
    emit({"summary": row, "samples": samples}, args.json, lambda: print_report(row))
    did_work("concepts written came back after the restart", back if back == args.concepts else 0, args.concepts,
             as_json=args.json)
    return 0


def print_report(row: dict) -> None:
    print(f"\n{'concepts':>8} {'start':>7} {'RSS idle start':>15} {'RSS idle end':>13} {'MB/min':>7} "
          f"{'CPU idle':>9} {'stop':>7} {'restart':>8} {'restored':>9}")
    print(f"{row['concepts']:>8} {row['first_start_s']:>6.1f}s {row['rss_start_mb']:>12} MB {row['rss_end_mb']:>10} MB "
          f"{row['rss_growth_mb_per_min']:>7.1f} {row['cpu_idle_pct']:>8} % {row['stop_s']:>6.1f}s "
          f"{row['restart_s']:>7.1f}s {row['restored']:>9}")
    print("\nRSS and CPU of the stack's process while idle after the writes (median CPU); stop: SIGTERM until it "
          "exits (its final save); restart: until the banner on the same data (the restore).")


if __name__ == "__main__":
    raise SystemExit(main())
