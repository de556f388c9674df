"""The same question gets the same answer in every container: retrieval never depends on the process's
hash seed (PYTHONHASHSEED, random per Lambda container). The tuning stores' concepts are indexed and
every test message asked in processes of different seeds; the answers, and the exact scores behind them
(a sum taken in another order differs in its last bits, and a tie at the cut-off or the floor then goes
either way), must be the same in each."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from helpers.paths import ROOT

_ASK = r"""
import json, sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

from knowledge.format.concept import Concept
from knowledge.recall.index import Index

start = datetime(2026, 6, 1, tzinfo=timezone.utc)
index, messages, at = Index(), [], 0
for path in sorted(Path(sys.argv[1]).glob("*.json")):
    store = json.loads(path.read_text(encoding="utf-8"))
    for c in store["concepts"]:
        concept = Concept(name=f"{c['name']}-{path.stem}", description=c["description"], type=c["type"],
                          provenance="policy" if c["type"] == "policy" else "observed", confidence=0.6,
                          sources=("sess_seed",), occurrences=1, created_at=start,
                          updated_at=start + timedelta(hours=at % 24), body=c["body"])
        index.upsert(concept.name, "etag", concept, concept.render().encode())
        at += 1
    messages += [test["message"] for test in store["tests"]]
index.settle()
answers = []
for message in messages:
    matched = index.match(message)
    exact = lambda hits: [(h.name, h.score, h.coverage, matched.scores[index.docs[h.name].slot].hex()) for h in hits]
    answers.append([message, exact(index.relevant(message, 5, 1.0)), exact(index.search(message, 5))])
print(json.dumps(answers))
"""


def _answers(seed: str) -> list:
    env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    result = subprocess.run([sys.executable, "-c", _ASK, str(ROOT / "tests" / "data" / "stores")], cwd=ROOT,
                            env=env, capture_output=True, text=True, check=True)
    return json.loads(result.stdout)


def test_answers_do_not_depend_on_the_hash_seed():
    first, *others = [_answers(seed) for seed in ("1", "2", "3")]
    assert len(first) > 900 and sum(1 for _, relevant, _ in first if relevant) > 200  # the stores' messages, answered
    for other in others:
        differing = [a[0] for a, b in zip(first, other) if a != b]
        assert not differing, f"{len(differing)} answers differ with another hash seed, e.g. {differing[0]!r}"
