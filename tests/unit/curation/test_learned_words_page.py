"""The words page within its budget: with no words summary a page reads concepts a chunk at a time,
says how many it has not read, and the next pages read on; once caught up the summary is written, and
a fresh container then answers from it and the change journal in two requests, reading only what the
journal names as changed; a write the journal missed is found by the next sweep; a summary another
container wrote meanwhile, one that does not decode, or one older than the journal is trusted for, is
never trusted over the concepts."""

from __future__ import annotations

from datetime import date

from knowledge.curation.words_page import SWEEP_SECONDS, LearnedWords
from knowledge.curation.words_held import CODE, Held, decode, encode
from knowledge.curation.studio import Operator, Studio
from knowledge.format.learned_words import LearnedWord
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
    words = LearnedWords(store, studio.check_agent, **kwargs)
    studio.readers.append(words.told)
    return words


def test_a_page_without_a_summary_reads_on_within_its_budget_and_then_writes_the_summary(counted):
    store, calls = counted
    taught(store)
    words = page_over(store, catch_up_seconds=0, fetch_chunk=3, clock=Clock())
    first = words.page(ANA, T, A)
    assert (first["total"], first["catching_up"]) == (3, 4)  # one chunk of the seven read
    assert store.get_words_summary(T, A) is None  # never one written while behind
    second = words.page(ANA, T, A)
    assert (second["total"], second["catching_up"]) == (6, 1)
    third = words.page(ANA, T, A)
    assert (third["total"], third["catching_up"]) == (7, 0)
    assert [r["word"] for r in third["words"]] == [f"palavra {c}" for c in "gfedcba"]  # newest day first
    written = decode(store.get_words_summary(T, A).data, T, A).rows
    assert sorted(written) == sorted(e.name for e in store.list(T, A)) and all(len(r.words) == 1 for r in written.values())
    assert all(r.description for r in written.values())  # shown beside the words, with no concept read

    calls.clear()
    fresh = page_over(store)
    answer = fresh.page(ANA, T, A)
    assert answer["total"] == 7 and answer["words"][0]["description"]
    assert calls["s3"] == 2  # the summary and the journal since it: no listing, no snapshot, no concept read


def test_a_summary_that_does_not_decode_or_is_behind_is_never_trusted_over_the_concepts(counted, s3, bucket):
    store, _ = counted
    taught(store)
    # `s3`: the test writes what another writer might, with a client of its own
    s3.put_object(Bucket=bucket, Key=words_summary_key(T, A), Body=b"not a words summary")
    assert page_over(store).page(ANA, T, A)["total"] == 7
    summary = decode(store.get_words_summary(T, A).data, T, A)
    assert len(summary.rows) == 7  # written over

    stale = {name: row._replace(etag='"old"') for name, row in summary.rows.items()}
    stale = {name: row._replace(words=(), origins="", sessions=(), days=()) for name, row in stale.items()}
    # Older than the journal is trusted for (its entries may have expired): a fresh container lists every
    # concept at once, and finds every ETag moved on.
    old = summary.position - 13 * 3600
    s3.put_object(Bucket=bucket, Key=words_summary_key(T, A), Body=encode(T, A, stale, {}, old))
    assert page_over(store).page(ANA, T, A)["total"] == 7  # every ETag moved on: every concept read again
    assert decode(encode(T, A, stale, {"x": '"e"'}, old), T, A) == (stale, {"x": '"e"'}, old)


class Wall:
    """A container's two clocks, moved on by hand."""

    def __init__(self):
        self.now = 1_800_000_000.0

    def __call__(self):
        return self.now


def test_a_fresh_container_reads_only_what_the_journal_names_and_the_sweep_finds_what_it_missed(counted, s3):
    store, _ = counted
    taught(store)
    page_over(store).page(ANA, T, A)  # writes the summary
    names = sorted(e.name for e in store.list(T, A))
    clock = Wall()
    fresh = page_over(store, clock=clock)
    read = []
    fetch = store.fetch_many
    store.fetch_many = lambda tenant, agent, wanted: read.extend(wanted) or fetch(tenant, agent, wanted)
    current = store.get(T, A, names[0])
    store.replace(T, A, current.concept.replace(learned_words=(LearnedWord("nova", "operator", 0, date(2026, 12, 9)),)),
                  if_match=current.etag, actor="operator:ana", reason="edit")
    store.delete(T, A, names[1], actor="operator:ana")
    answer = fresh.page(ANA, T, A)
    assert read == [names[0]]  # the deleted one is dropped as the journal says, never read
    assert answer["total"] == 6 and answer["words"][0]["word"] == "nova"

    # A write the journal never heard of (a writer killed before its entry): stale until the next sweep.
    changed = store.get(T, A, names[2])
    missed = changed.concept.replace(learned_words=(LearnedWord("perdida", "loaded", 3, date(2026, 12, 10)),))
    s3.put_object(Bucket=store.bucket, Key=f"agents/{T}/{A}/concepts/{names[2]}.md", Body=missed.render().encode())
    assert "perdida" not in [r["word"] for r in fresh.page(ANA, T, A)["words"]]
    clock.now += SWEEP_SECONDS
    assert fresh.page(ANA, T, A)["words"][0]["word"] == "perdida"
    assert read[-1] == names[2] and len(read) == 2  # the listing found it, and only it was read


def test_a_concept_that_does_not_parse_is_read_once_not_at_every_sweep(counted, s3):
    store, _ = counted
    taught(store)
    name = sorted(e.name for e in store.list(T, A))[0]
    s3.put_object(Bucket=store.bucket, Key=f"agents/{T}/{A}/concepts/{name}.md", Body=b"---\nnot: a concept\n---\n")
    clock = Wall()  # both clocks: the journal's entries of the seeding are behind it
    words = page_over(store, clock=clock, wall=clock)
    assert words.page(ANA, T, A)["total"] == 6
    assert decode(store.get_words_summary(T, A).data, T, A).unreadable.keys() == {name}
    read = []
    fetch = store.fetch_many
    store.fetch_many = lambda tenant, agent, wanted: read.extend(wanted) or fetch(tenant, agent, wanted)
    clock.now += SWEEP_SECONDS
    assert words.page(ANA, T, A)["total"] == 6 and read == []
    assert page_over(store, clock=clock, wall=clock).page(ANA, T, A)["total"] == 6 and read == []


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


def test_origin_codes_keep_their_meaning_an_operators_word_round_trips_and_an_earlier_summary_is_rebuilt():
    import json
    import zlib

    import pytest

    from knowledge.curation.words_held import MAGIC, Row

    # Coded as every release coded them (their place in ORIGINS): 0 loaded, 1 sighting, 2 model; 3 operator.
    day = date(2026, 11, 20).toordinal()
    body = {"tenant": T, "agent": A, "position": 1.0, "unreadable": {}, "names": ["troca"], "etags": ['"e"'],
            "descriptions": ["Troca em 30 dias."], "removed": [1], "counts": [4],
            "words": ["destroca", "estorno", "minha", "trocar"], "origins": "0123", "sessions": [5, 3, 0, 0],
            "days": [day] * 4}
    [row] = decode(MAGIC + zlib.compress(json.dumps(body).encode()), T, A).rows.values()
    held = Held()
    held.put("troca", row)
    assert [held.entry("troca", i)["origin"] for i in range(4)] == ["loaded", "sighting", "model", "operator"]

    mine = Row('"f"', ("telinha",), CODE["operator"], (0,), (day,), 0, "Troca de tela.")
    assert decode(encode(T, A, {"mine": mine}), T, A).rows == {"mine": mine}
    held.put("mine", mine)
    assert held.entry("mine", 0) == {"word": "telinha", "origin": "operator", "sessions": 0, "at": "2026-11-20"}

    earlier = {k: v for k, v in body.items() if k not in ("position", "unreadable", "descriptions")}
    with pytest.raises(ValueError):  # the format before positions: no summary, rebuilt from the concepts
        decode(b"KNOWLEDGE-WORDS/2\n" + zlib.compress(json.dumps(earlier).encode()), T, A)
