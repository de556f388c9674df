"""scripts/bench/stores_handler.py's core at ~200 concepts, on the tests' moto: it replicates the tuning
stores (never the held-out ones) with ~24 learned words each, times RetrieveFunction's handler on
the stores' test messages, counts what injected and what reached S3, and refuses to time a handler
that answers nothing."""

from __future__ import annotations

import pytest
from helpers.aws import new_bucket

from scripts.bench import stores_handler as bench


@pytest.fixture(scope="module")
def corpus():
    return bench.load_corpus()


def test_the_corpus_is_the_tuning_stores_replicated_with_their_learned_words(corpus):
    stores = {store for store, _ in corpus.bases}
    assert {"academia", "materiais", "drogaria"} <= stores and not stores & {"beleza", "livraria"}
    size = len(corpus.bases) + 10  # past one replica of every concept
    written = bench.concepts(corpus, size)
    assert len({c.name for c in written}) == size
    assert len({(c.description, c.body) for c in written}) == size  # replicas differ in their text
    origins = [e.origin for c in written for e in c.learned_words]
    assert origins.count("model") > 0 and origins.count("loaded") > 0
    assert sum(len(c.learned_words) for c in written) / size >= 20
    said = {w for words in corpus.store_words.values() for w in words}
    for c in written:  # the traffic's words are the customers' own; the model's, the stand-in's
        store = c.name.rsplit("-", 2)[1]
        base = c.name.rsplit("-", 2)[0]
        proposed = {" ".join(p.lower().split()) for p in corpus.proposals[store].get(base, [])}
        assert all(e.word in said for e in c.learned_words if e.origin == "loaded"), c.name
        assert all(e.word in proposed for e in c.learned_words if e.origin == "model"), c.name


def test_the_handler_bench_times_answers_that_inject_with_no_s3_request_per_warm_call(s3, corpus):
    row = bench.bench_size(corpus, 200, s3, new_bucket(s3), rounds=1, messages=corpus.messages[::4])
    handler = row["handler"]
    assert handler["answers"] == len(corpus.messages[::4]) and 0 < handler["injected"] <= handler["answers"]
    assert handler["s3_per_call"] == 0 and handler["p50_ms"] > 0
    assert row["index"]["injected"] > 0 and row["learned_words"] >= 20
    if bench.bm25s_available():
        assert row["bm25s"]["p50_ms"] > 0
    else:
        assert row["bm25s"] is None


def test_a_handler_that_injects_nothing_fails_the_bench_loudly(s3, corpus):
    bucket = new_bucket(s3)
    bench.write_agent(s3, bucket, "chit-chat", bench.concepts(corpus, 20))
    with pytest.raises(bench.NothingInjected, match="none of the 4 timed answers of chit-chat"):
        bench.time_handler(bucket, "chit-chat", ["oi, tudo bem?", "obrigada, boa noite!", "ok", "valeu"], rounds=1)
