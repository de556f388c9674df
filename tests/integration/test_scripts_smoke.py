"""Every bench, report and build step in scripts/ runs at its smoke size, as `python -m scripts.<group>.<name>`
from the repository root (what `./run script` does), and says in its own output that it did its work:
its `did the work: N of M ...` line (scripts/lib/harness.py), N at least 1. The runs go two at a time
(most of a smoke run waits on a server, a refresh or a subprocess), the slowest first; the whole tier's
time is in tests/README.md."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from concurrent.futures import Future, ThreadPoolExecutor

import pytest
from helpers.paths import ROOT

# Each script and the arguments of its smoke run: --smoke where the script has a smaller run, none where
# its whole run takes seconds, --check for a build step (it writes nothing and compares).
SMOKE = {
    "bench.agent_tools": ["--smoke"],
    "bench.consolidate": ["--smoke"],
    "bench.distill": ["--smoke"],
    "bench.extract": ["--smoke"],
    "bench.facts_bulk": ["--smoke"],
    "bench.knowledge_index": ["--smoke"],
    "bench.learned_words": ["--smoke"],
    "bench.local_stack": ["--smoke"],
    "bench.recall_lapsed": ["--smoke"],
    "bench.shared_recall": ["--smoke"],
    "bench.stores_handler": ["--smoke"],
    "bench.studio_history": ["--smoke"],
    "bench.studio_list": ["--smoke"],
    "bench.studio_search": ["--smoke"],
    "bench.studio_words": ["--smoke"],
    "reports.claims": [],
    "reports.convergence": ["--smoke"],
    "reports.echo": ["--smoke"],
    "reports.eval_model": ["--smoke"],
    "reports.faults": ["--smoke"],
    "reports.fit_recall": ["--smoke", "--fit", "--unaided", "--loso"],
    "reports.imports": ["--smoke"],
    "reports.model_faults": ["--smoke"],
    "reports.pii": [],
    "reports.retrieval": [],
    "reports.small_index": ["--smoke"],
    "reports.stores": ["--smoke"],
    "reports.switch": ["--smoke"],
    "reports.validity": [],
    "gen.openapi": ["--check"],
    "gen.schemas": ["--check"],
    "gen.word_frequency": ["--check"],
}
DID_WORK = re.compile(r"^did the work: (\d+) of (\d+) \S", re.M)
# The stand-ins the tests' conftest puts in the environment are this process's, not a script's: each
# script starts what it needs (its own moto, its own scripted model).
THEIRS = ("AWS_", "KNOWLEDGE_", "SESSIONS_", "POWERTOOLS_", "OPENAI_", "UTILITY_", "EVENT_BUS", "FACTS_",
          "CANDIDATES_", "STUDIO_")


# The longest smoke runs (measured, tests/README.md), started first so that two at a time finish together.
SLOWEST = ("bench.local_stack", "reports.model_faults", "reports.switch", "bench.knowledge_index",
           "bench.studio_words", "reports.small_index", "reports.imports", "bench.studio_list", "reports.convergence")


def scripts_on_disk() -> set[str]:
    return {f"{path.parent.name}.{path.stem}" for group in ("bench", "reports", "gen")
            for path in (ROOT / "scripts" / group).glob("*.py") if path.stem != "__init__"}


def test_every_script_has_a_smoke_run():
    missing = sorted(scripts_on_disk() - set(SMOKE))
    assert not missing, "add to SMOKE in tests/integration/test_scripts_smoke.py: " + ", ".join(
        f'"{name}": ["--smoke"],' for name in missing)
    assert not set(SMOKE) - scripts_on_disk(), "SMOKE names a script that is gone"


def smoke_run(name: str) -> subprocess.CompletedProcess:
    env = {key: value for key, value in os.environ.items() if not key.startswith(THEIRS)}
    return subprocess.run([sys.executable, "-m", f"scripts.{name}", *SMOKE[name]], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def smoke_runs(request) -> dict[str, Future]:
    """The smoke runs of the scripts this session selected, started together, two at a time."""
    chosen = {item.callspec.params["name"] for item in request.session.items
              if item.originalname == "test_the_script_does_its_work_at_its_smoke_size"}
    order = [name for name in SLOWEST if name in chosen] + sorted(chosen - set(SLOWEST))
    pool = ThreadPoolExecutor(max_workers=2)
    yield {name: pool.submit(smoke_run, name) for name in order}
    pool.shutdown(cancel_futures=True)


@pytest.mark.parametrize("name", sorted(SMOKE))
def test_the_script_does_its_work_at_its_smoke_size(name, smoke_runs):
    done = smoke_runs[name].result()
    said = done.stdout + done.stderr
    assert done.returncode == 0, f"scripts.{name} exited {done.returncode}:\n{said[-3000:]}"
    lines = DID_WORK.findall(said)
    assert lines, f"scripts.{name} never said it did its work:\n{said[-2000:]}"
    assert all(0 < int(n) <= int(of) for n, of in lines), lines
