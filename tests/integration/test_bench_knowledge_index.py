"""scripts/bench/knowledge_index.py's handler bench (scripts/lib/index_handler.py) at a tiny size, on the tests' moto: the synthetic
corpus is recalled on the day the bench runs, the bench says how many timed answers injected
something, and it refuses to time a handler that answers nothing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from helpers.aws import new_bucket

from scripts.lib import index_handler as bench
from scripts.lib import synthetic_corpus as synthetic


@pytest.fixture
def agent(s3):
    """An agent of 60 synthetic concepts in a bucket of its own, as the bench writes them."""
    from knowledge.store.concepts import ConceptStore

    bucket = new_bucket(s3)
    store = ConceptStore(s3, bucket)
    name = "agent-60"
    store.put_config("default", name, "knowledge: {}\n", actor="engine")
    concepts, zipf = synthetic.corpus(60)
    for concept in concepts:
        store.create("default", name, concept, actor="engine")
    return bucket, name, concepts, zipf


def test_the_synthetic_corpus_is_never_stale_on_the_day_it_is_drawn():
    from knowledge.format.config import DEFAULT_STALE_AFTER_DAYS

    concepts, _ = synthetic.corpus(2_000)
    now = datetime.now(UTC)
    assert all(now - timedelta(days=DEFAULT_STALE_AFTER_DAYS) < c.updated_at < now for c in concepts)


def test_the_handler_bench_says_how_many_timed_answers_injected(agent):
    bucket, name, _, zipf = agent
    result = bench.bench_handler(name, synthetic.queries(zipf, 30), bucket=bucket)
    assert result["answers"] == 30 and 0 < result["injected"] <= 30
    assert result["concepts"] == 60 and result["p50_ms"] > 0


def test_a_handler_that_injects_nothing_fails_the_bench_loudly(agent):
    bucket, name, _, _ = agent
    chit_chat = ["oi, tudo bem?", "obrigada, boa noite!", "ok", "valeu"]
    with pytest.raises(bench.NothingInjected, match="none of the 4 timed answers of agent-60"):
        bench.bench_handler(name, chit_chat, bucket=bucket)
