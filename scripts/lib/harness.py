"""What every bench and report shares: timing in milliseconds, percentiles, moto's server, a table
or JSON on stdout, the seed, the smoke size, the child process, and the line that says the work was done.

A bench that times empty answers measures nothing, so each one ends with `did_work(...)`: the line
`did the work: N of M <what>` in its own output (stdout; stderr under --json, so the JSON stays
whole), and a failure when N is 0. The smoke tests (tests/integration/test_scripts_smoke.py) read
that line."""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["ROOT", "SEED", "Column", "NoWorkDone", "child", "did_work", "emit", "moto", "p50_p95", "parser",
           "percentile", "print_table", "timed", "timed_calls"]

ROOT = Path(__file__).resolve().parents[2]
SEED = 7  # the synthetic corpus's and every bench's default: one run is comparable with the next


def timed(fn: Callable[[Any], Any], items: Iterable[Any], repeat: int = 1) -> list[float]:
    """Milliseconds per call of `fn(item)`, one figure per item (the mean of `repeat` calls)."""
    out = []
    for item in items:
        start = time.perf_counter()
        for _ in range(repeat):
            fn(item)
        out.append((time.perf_counter() - start) * 1000 / repeat)
    return out


def timed_calls(fn: Callable[[], Any], n: int) -> list[float]:
    """Milliseconds of each of `n` calls of `fn()`."""
    return timed(lambda _: fn(), range(n))


def percentile(values: Sequence[float], q: float) -> float:
    """The nearest-rank percentile (q in 0..1), as every figure in docs/ was read."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def p50_p95(values: Sequence[float]) -> tuple[float, float]:
    return statistics.median(values), percentile(values, 0.95)


@contextmanager
def moto(credential: str = "bench") -> Iterator[str]:
    """moto's server on a free port with this process's boto3 pointed at it; yields the endpoint."""
    from knowledge_dev.local_aws import moto_server

    with moto_server(credential) as endpoint:
        yield endpoint


def parser(doc: str | None, *, smoke: str | None = "the smallest run that still does the work (the tests' smoke run)",
           seed: bool = False) -> argparse.ArgumentParser:
    """The arguments every script takes: --json and --smoke (none where the whole run takes seconds: it is
    its own smoke run), and --seed where a run draws at random."""
    made = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    made.add_argument("--json", action="store_true", help="print the figures as JSON")
    if smoke:
        made.add_argument("--smoke", action="store_true", help=smoke)
    if seed:
        made.add_argument("--seed", type=int, default=SEED, help=f"the random seed (default {SEED})")
    return made


def emit(result: Any, as_json: bool, table: Callable[[], None]) -> None:
    """The figures as JSON, or the script's own table."""
    if as_json:
        print(json.dumps(result, indent=1, default=str, ensure_ascii=False))
    else:
        table()


@dataclass(frozen=True)
class Column:
    header: str
    width: int
    cell: Callable[[dict], str]
    left: bool = False


def print_table(columns: Sequence[Column], rows: Iterable[dict], indent: str = "") -> None:
    """A header, a rule and one line per row, each cell right-aligned in its width (or left)."""

    def line(cells: Sequence[str]) -> str:
        return indent + " ".join(f"{c:<{col.width}}" if col.left else f"{c:>{col.width}}"
                                 for col, c in zip(columns, cells)).rstrip()

    head = line([col.header for col in columns])
    print(head)
    print(indent + "-" * (len(head) - len(indent)))
    for row in rows:
        print(line([col.cell(row) for col in columns]))


class NoWorkDone(RuntimeError):
    """What a bench timed did nothing (no answer injected, no row listed): its figures would mislead."""


def did_work(what: str, done: int, of: int, *, as_json: bool = False) -> None:
    """Say how much of what was timed did the work; fail when none of it did."""
    print(f"did the work: {done} of {of} {what}", file=sys.stderr if as_json else sys.stdout, flush=True)
    if done <= 0:
        raise NoWorkDone(f"none of the {of} {what}: the figures would time nothing")


def child(module: str, *args: str, env: dict | None = None, check: bool = True) -> subprocess.CompletedProcess:
    """`python -m <module> <args>` in a fresh process from the repository root (a bench's child)."""
    return subprocess.run([sys.executable, "-m", module, *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, check=check)


class Counted:
    """`fn` wrapped to count its calls and the answers `ok` accepts: what a bench times, checked as it runs."""

    def __init__(self, fn: Callable[..., Any], ok: Callable[[Any], bool]):
        self.fn, self.ok = fn, ok
        self.calls = self.done = 0

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        answer = self.fn(*args, **kwargs)
        self.calls += 1
        self.done += bool(self.ok(answer))
        return answer
