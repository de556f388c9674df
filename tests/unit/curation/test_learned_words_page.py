"""The words page within its budget: with no words summary a page reads concepts a chunk at a time,
says how many it has not read, and the next pages read on; once caught up the summary is written, and
a fresh container then answers from it in three requests; a summary another container wrote
meanwhile, or one that does not decode, is never trusted over the concepts."""

from __future__ import annotations

from datetime import date

from knowledge.curation.learned_words import LearnedWords
from knowledge.curation.words_held import CODE, Held, decode, encode
from knowledge.curation.studio import Operator, Studio
from knowledge.format.learned import LearnedWord
from knowledge.store.keys import words_summary_key

T, A = "default", "store-support"
ANA = Operator("ana", frozenset({T}))


def taught(store):
    """Every demo concept with one learned word, its own name's first part."""
    for i, entry in enumerate(sorted(store.list(T, A), key=lambda e: e.name)):
        current = store.get(T, A, entry.name)
        word = LearnedWord(f"palavra {chr(97 + i)}", "loaded", 3, date(2026, 11, 1 + i))
        store.replace(T, A, current.concept.replace(learned_words=(word,)), if_match=current.etag,
                      actor="learning", reason="learned")


class Clock:
    """Time moves on only when a page asks: every budget spent after one chunk."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        self.now += 10.0
        return self.now


def page_over(store, **kwargs):
    studio = Studio(store)
    words = LearnedWords(studio.rows, store, **kwargs)
    studio.readers.append(words.told)
    return words


def test_a_page_without_a_summary_reads_on_within_its_budget_and_then_writes_the_summary(counted):
    store, calls = counted
    taught(store)
    words = LearnedWords(Studio(store).rows, store, catch_up_seconds=0, fetch_chunk=3, clock=Clock())
    first = words.page(ANA, T, A)
    assert (first["total"], first["catching_up"]) == (3, 4)  # one chunk of the seven read
    assert store.get_words_summary(T, A) is None  # never one written while behind
    second = words.page(ANA, T, A)
    assert (second["total"], second["catching_up"]) == (6, 1)
    third = words.page(ANA, T, A)
    assert (third["total"], third["catching_up"]) == (7, 0)
    assert [r["word"] for r in third["words"]] == [f"palavra {c}" for c in "gfedcba"]  # newest day first
    written = decode(store.get_words_summary(T, A).data, T, A)
    assert sorted(written) == sorted(e.name for e in store.list(T, A)) and all(len(r.words) == 1 for r in written.values())

    calls.clear()
    fresh = page_over(store)
    assert fresh.page(ANA, T, A)["total"] == 7
    assert calls["s3"] <= 4  # the snapshot (or the listing), the config, the summary: no concept read


def test_a_summary_that_does_not_decode_or_is_behind_is_never_trusted_over_the_concepts(counted):
    store, _ = counted
    taught(store)
    s3, bucket = store._s3, store.bucket  # noqa: SLF001 - the test writes what another writer might
    s3.put_object(Bucket=bucket, Key=words_summary_key(T, A), Body=b"not a words summary")
    assert page_over(store).page(ANA, T, A)["total"] == 7
    assert len(decode(store.get_words_summary(T, A).data, T, A)) == 7  # written over

    stale = {name: row._replace(etag='"old"') for name, row in decode(store.get_words_summary(T, A).data, T, A).items()}
    stale = {name: row._replace(words=(), origins="", sessions=(), days=()) for name, row in stale.items()}
    s3.put_object(Bucket=bucket, Key=words_summary_key(T, A), Body=encode(T, A, stale))
    assert page_over(store).page(ANA, T, A)["total"] == 7  # every ETag moved on: every concept read again
    assert decode(encode(T, A, stale), T, A) == stale


def test_a_cursor_goes_on_after_its_word_even_once_that_word_or_its_concept_is_gone():
    import numpy as np

    from knowledge.curation.words_held import Held, Row, cursor_key

    def row(*words, day):
        return Row('"e"', tuple(sorted(words)), "0" * len(words), (3,) * len(words), (day,) * len(words), 0)

    day = date(2026, 11, 20).toordinal()
    held = Held()
    for name, r in {"b-concept": row("zeta", "alfa", day=day), "a-concept": row("meio", day=day),
                    "c-concept": row("velho", day=day - 1)}.items():
        held.put(name, r)

    def listed():
        order = held.ordered()
        return [(order.names[o], held.rows[order.names[o]].words[p]) for o, p in zip(order.owner, order.place)]

    def after(name, word):
        order = held.ordered()
        start = int(np.searchsorted(order.keys, cursor_key(order, held.rows, day, name, word), side="right"))
        return listed()[start:]

    assert listed() == [("a-concept", "meio"), ("b-concept", "alfa"), ("b-concept", "zeta"), ("c-concept", "velho")]
    assert after("b-concept", "alfa") == [("b-concept", "zeta"), ("c-concept", "velho")]
    held.put("b-concept", row("zeta", day=day))  # the cursor's word removed meanwhile
    assert after("b-concept", "alfa") == [("b-concept", "zeta"), ("c-concept", "velho")]
    held.put("a-concept", None)  # the cursor's concept deleted meanwhile
    assert after("a-concept", "meio") == [("b-concept", "zeta"), ("c-concept", "velho")]


def test_a_words_summary_written_before_operator_words_reads_as_it_did_and_an_operators_word_round_trips():
    import json
    import zlib

    from knowledge.curation.words_held import MAGIC, Row

    # As the release before operator words wrote it: origins coded 0 loaded, 1 sighting, 2 model.
    day = date(2026, 11, 20).toordinal()
    body = {"tenant": T, "agent": A, "names": ["troca"], "etags": ['"e"'], "removed": [1], "counts": [3],
            "words": ["destroca", "estorno", "trocar"], "origins": "012", "sessions": [5, 3, 0],
            "days": [day, day, day]}
    earlier = MAGIC + zlib.compress(json.dumps(body).encode())
    [row] = decode(earlier, T, A).values()
    held = Held()
    held.put("troca", row)
    assert [held.entry("troca", i)["origin"] for i in range(3)] == ["loaded", "sighting", "model"]

    mine = Row('"f"', ("telinha",), CODE["operator"], (0,), (day,), 0)
    assert decode(encode(T, A, {"mine": mine}), T, A) == {"mine": mine}
    held.put("mine", mine)
    assert held.entry("mine", 0) == {"word": "telinha", "origin": "operator", "sessions": 0, "at": "2026-11-20"}
