"""The agent's snapshot and change journal: a cold container in two requests, a quiet refresh in
one, deletes seen within the window, and a writer killed between steps leaving it stale, never wrong."""

from __future__ import annotations

import json

import pytest
from helpers.concepts import make_concept
from helpers.fakes import Clock, Events
from helpers.paths import DEMO, ROOT
from helpers.snapshot import Refusing, answers, ask, warmed

from knowledge.format.concept import parse
from knowledge.recall.index import Index
from knowledge.recall.retrieve import LoadRequest, Retriever
from knowledge.errors import SnapshotUnreadable
from knowledge.recall.analysis import analyze
from knowledge.recall.snapshot import Snapshot, decode, encode
from knowledge.recall.warm import SWEEP_SECONDS, WarmIndexes, memory_budget_bytes
from knowledge.store.keys import snapshot_key

T, A = "default", "store-support"


class Killed(BaseException):
    """The container dies here: nothing after this line runs, and nothing catches it."""


def test_a_cold_container_reads_the_snapshot_and_the_journal_and_answers_as_a_full_build(counted):
    store, calls = counted
    first = warmed(store)
    calls.clear()
    cold = Retriever(store, Events(), refresh_seconds=60)
    assert answers(cold) == answers(first)
    assert calls["s3"] == 4  # the snapshot, the journal, knowledge.yaml If-None-Match, vocabulary.yaml: no concept
    assert cold.counters.get("SnapshotLoaded") == 1


def test_load_knowledge_of_a_concept_restored_from_the_snapshot_is_the_stored_markdown_byte_for_byte(counted):
    store, calls = counted
    warmed(store)
    calls.clear()
    events = Events()
    cold = Retriever(store, events)
    answer = cold.load(LoadRequest(action="load_knowledge", agent=A, session_id="sess_9",
                                   name="cep-sudeste-cd-campinas"))
    assert answer["markdown"] == (DEMO / "cep-sudeste-cd-campinas.md").read_text()
    assert answer["concept"]["confidence"] == 0.7
    # The snapshot, the journal, knowledge.yaml If-None-Match, vocabulary.yaml, then that one concept.
    assert calls["s3"] == 4 + 1
    assert [detail["name"] for _, detail in events.published] == ["cep-sudeste-cd-campinas"]


def test_a_quiet_refresh_is_the_journal_and_a_conditional_config_read_and_a_change_costs_the_changed_concept_only(counted):
    store, calls = counted
    warmed(store)
    clock = Clock()
    cold = Retriever(store, Events(), refresh_seconds=5, clock=clock)
    ask(cold)
    calls.clear()
    clock.now += 5
    ask(cold)
    assert calls["s3"] == 2  # the journal, empty since the last look, and knowledge.yaml If-None-Match
    current = store.get(T, A, "cep-sudeste-cd-campinas")
    store.replace(T, A, current.concept.replace(description="Campinas DC now ships next day."),
                  if_match=current.etag, actor="operator:ana", reason="edit")
    calls.clear()
    clock.now += 5
    assert "Campinas DC now ships next day." in ask(cold)["block"]
    assert calls["s3"] == 2 + 1  # the journal, the config (not modified), the changed concept


def test_a_deleted_concept_disappears_within_the_refresh_window_from_a_container_loaded_from_the_snapshot(counted):
    store, calls = counted
    warmed(store)
    clock = Clock()
    cold = Retriever(store, Events(), refresh_seconds=5, clock=clock)
    assert "cep-sudeste-cd-campinas" in ask(cold)["block"]
    store.delete(T, A, "cep-sudeste-cd-campinas", actor="operator:ana")
    clock.now += 5
    assert "cep-sudeste-cd-campinas" not in ask(cold)["block"]
    with pytest.raises(Exception) as gone:
        cold.load(LoadRequest(action="load_knowledge", agent=A, session_id="s1", name="cep-sudeste-cd-campinas"))
    assert gone.value.code == "not_found"
    # A container started after the delete, from the snapshot written before it, never serves it either.
    assert "cep-sudeste-cd-campinas" not in ask(Retriever(store, Events()))["block"]


def test_a_config_change_is_seen_in_the_same_one_request(counted):
    store, calls = counted
    warmed(store)
    clock = Clock()
    cold = Retriever(store, Events(), refresh_seconds=5, clock=clock)
    assert ask(cold)["block"]
    store.put_config(T, A, "knowledge:\n  retrieve: false\n", actor="operator:ana", if_match=store.get_config(T, A).etag)
    clock.now += 5
    calls.clear()
    assert ask(cold) == {"block": "", "concepts": [], "priority": 77, "tool": None, "reason": "retrieval_off"}
    assert calls["s3"] == 1 + 1  # the journal names knowledge.yaml: it is read again


class Dying:
    """The real store, except that the container dies when it reaches `step`."""

    def __init__(self, store, step):
        self._store, self._step = store, step

    def __getattr__(self, name):
        if name == self._step:
            def die(*args, **kwargs):
                raise Killed(name)
            return die
        return getattr(self._store, name)


@pytest.mark.parametrize("step", ["list", "fetch_many", "put_snapshot"])
def test_a_snapshot_writer_killed_between_steps_leaves_it_stale_never_wrong(counted, step):
    store, _ = counted
    first = warmed(store)
    before = store.get_snapshot(T, A).etag
    # The store moves on: one concept deleted, one new, one edited.
    store.delete(T, A, "objecao-frete-caro", actor="operator:ana")
    store.create(T, A, make_concept("frete-campinas-sabado", description="Campinas frete also on Saturdays.",
                                    body="Frete to Campinas ships on Saturdays too."), actor="engine")
    current = store.get(T, A, "cep-sudeste-cd-campinas")
    store.replace(T, A, current.concept.replace(description="Campinas DC now ships next day."),
                  if_match=current.etag, actor="operator:ana", reason="edit")
    # A second container rebuilds (its sweep is due at once: what it lists differs from its snapshot,
    # it would write a newer one) and dies at `step`.
    dying = Retriever(Dying(store, step), Events(), refresh_seconds=0, sweep_seconds=0)
    with pytest.raises(Killed):
        for _ in range(3):
            ask(dying)
    assert store.get_snapshot(T, A).etag == before  # the old snapshot is still there, untouched
    # The next cold container serves what the store has now, never what it no longer has.
    fresh = Retriever(store, Events())
    block = ask(fresh)["block"]
    assert "objecao-frete-caro" not in block and "Campinas DC now ships next day." in block
    assert "frete-campinas-sabado" in ask(fresh, "Frete para Campinas no sábado?")["block"]
    del first


def test_a_concept_writer_killed_before_its_journal_entry_leaves_readers_stale_until_their_sweep(counted, s3,
                                                                                              bucket):
    store, _ = counted
    warmed(store)
    clock = Clock()
    cold = Retriever(store, Events(), refresh_seconds=5, clock=clock)
    assert "cep-sudeste-cd-campinas" in ask(cold)["block"]
    # The delete landed; the writer died before its journal entry.
    s3.delete_object(Bucket=bucket, Key="agents/default/store-support/concepts/cep-sudeste-cd-campinas.md")
    clock.now += 5
    assert "cep-sudeste-cd-campinas" in ask(cold)["block"]  # stale: nothing says it changed
    clock.now += SWEEP_SECONDS
    assert "cep-sudeste-cd-campinas" not in ask(cold)["block"]  # the sweep lists every concept
    assert cold.counters.get("SnapshotWritten") == 1  # and writes back what the journal did not say
    assert "cep-sudeste-cd-campinas" not in ask(Retriever(store, Events()))["block"]


def test_a_snapshot_that_does_not_decode_is_rebuilt_and_overwritten(counted, s3, bucket):
    store, calls = counted
    s3.put_object(Bucket=bucket, Key=snapshot_key(T, A), Body=b"KNOWLEDGE-SNAPSHOT/2\n not zlib")
    retriever = Retriever(store, Events())
    assert "cep-sudeste-cd-campinas" in ask(retriever)["block"]
    assert retriever.counters.get("SnapshotUnreadable") == 1 and retriever.counters.get("SnapshotWritten") == 1
    decode(store.get_snapshot(T, A).data, T, A)  # a good one now


def test_another_agents_snapshot_is_no_snapshot(counted):
    store, _ = counted
    warmed(store)
    with pytest.raises(SnapshotUnreadable):
        decode(store.get_snapshot(T, A).data, T, "other-agent")


class Late:
    """The real store, read by a container that looked for the snapshot before another wrote it."""

    def __init__(self, store):
        self._store = store

    def get_snapshot(self, tenant, agent):
        return None

    def __getattr__(self, name):
        return getattr(self._store, name)


def test_two_containers_racing_to_write_the_snapshot_leave_one_and_the_loser_stops(counted):
    store, _ = counted
    one, two = Retriever(store, Events()), Retriever(Late(store), Events())
    ask(one)
    written = store.get_snapshot(T, A).etag
    assert ask(two) == ask(one)  # listed and fetched; its create-only write found the first one's snapshot
    assert two.counters.get("SnapshotRaceLost") == 1 and two.knowledge(T, A).snapshot_lost
    assert store.get_snapshot(T, A).etag == written


def labelled_concepts():
    from scripts.reports.retrieval import concepts_of

    return concepts_of()


def test_an_index_restored_from_a_snapshot_ranks_exactly_as_the_one_it_was_taken_from():
    concepts = labelled_concepts()
    index = Index()
    for concept in concepts:
        index.upsert(concept.name, "etag", concept, concept.render().encode())
    index.settle()
    for concept in concepts[::5]:  # dead postings and renumbered slots must not show
        index.remove(concept.name)
    index.settle()
    data = json.loads((ROOT / "tests" / "data" / "retrieval_labelled.json").read_text())
    messages = [q["message"] for q in data["queries"] + data["off_topic"]]
    restored = decode(encode(Snapshot(T, A, index, 0.0)), T, A).index
    assert set(restored.docs) == set(index.docs)
    for message in messages:
        assert restored.relevant(message, 5, 1.0) == [hit._replace(doc=restored.docs[hit.name])
                                                       for hit in index.relevant(message, 5, 1.0)]
        ours, theirs = restored.search(message, 20), index.search(message, 20)
        assert [h.score for h in ours] == [h.score for h in theirs]
        # Which of several concepts tied at the cut is kept is the partition's choice, in any index.
        cut = theirs[-1].score if len(theirs) == 20 else -1.0
        assert [h.name for h in ours if h.score > cut] == [h.name for h in theirs if h.score > cut]
    # And it keeps changing like any index.
    restored.upsert("frete-novo", "e2", make_concept("frete-novo", description="Frete novo para Manaus."), b"")
    restored.settle()
    assert restored.search("frete manaus", 1)[0].name == "frete-novo"


# ------------------------------------------------------------------ the memory budget

def test_the_budget_comes_from_the_functions_memory():
    assert memory_budget_bytes({"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "512"}) == (512 - 160) * 2**19
    assert memory_budget_bytes({}) is None  # not in Lambda: no budget
    assert memory_budget_bytes({"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "lots"}) is None


def test_the_least_recently_used_agent_is_evicted_by_measured_size_and_comes_back_from_its_snapshot(counted):
    store, calls = counted
    for agent in ("loja-b", "loja-c"):
        store.put_config(T, agent, (DEMO / "knowledge.yaml").read_text(), actor="operator:demo")
        for path in sorted(DEMO.glob("*.md")):
            store.create(T, agent, parse(path.read_text()), actor="engine")
    sizing = WarmIndexes(store, lambda config: config.retrieve)
    one_agent = sizing.knowledge(T, A).size
    assert one_agent > 10_000
    warm = WarmIndexes(store, lambda config: config.retrieve, memory_budget=int(one_agent * 2.5))
    for agent in (A, "loja-b", A, "loja-c"):  # loja-b is now the least recently used
        warm.knowledge(T, agent)
    assert warm.counters.get("IndexEvicted") == 1
    assert warm.held_bytes() <= int(one_agent * 2.5)
    calls.clear()
    again = warm.knowledge(T, "loja-b")
    assert calls["s3"] == 3 and len(again.index) == 7  # its snapshot, the journal and the config, not seven concepts


def test_the_measured_size_follows_what_the_index_really_holds():
    import tracemalloc

    concepts = labelled_concepts()
    for concept in concepts:  # the stemmer's memo is the process's, not the index's
        Index().upsert(concept.name, "etag", concept, concept.render().encode())
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    index = Index()
    for concept in concepts:
        index.upsert(concept.name, "etag", concept, concept.render().encode())
    index.settle()
    held = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    assert 0.6 * held <= index.memory_bytes() <= 1.4 * held


def test_the_measured_size_counts_a_full_typo_cache():
    import random
    import string
    import tracemalloc

    from knowledge.recall.index import TYPO_CACHE

    index = Index()
    for concept in labelled_concepts():
        index.upsert(concept.name, "etag", concept, concept.render().encode())
    index.settle()
    forms = sorted({form for concept in labelled_concepts() for _, form in analyze(concept.render()).words
                    if len(form) >= 7})
    counted, shape = index.memory_bytes(), index.shape()
    rng = random.Random(7)
    # CPython hands out small tuples from free lists that tracemalloc never sees allocated: how full
    # they are depends on what ran before in the process (held fell 20 % after the stores' tests).
    # Emptied first, and kept empty while measuring, every tuple the cache keeps is counted.
    emptied = [tuple(range(n)) + (k,) for n in range(3) for k in range(2100)]
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for k in range(TYPO_CACHE + 100):  # half of them typos of store words, half no word at all
        form = rng.choice(forms)
        at = rng.randrange(1, len(form))
        word = (form[:at] + rng.choice(string.ascii_lowercase) + form[at + 1:] if k % 2 else
                "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(6, 20))))
        index.corrected(word)
    held = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    del emptied
    # The shape the container re-measures on does not move: the size counts the cache full at once.
    assert index.typos_held == TYPO_CACHE and index.shape() == shape
    # What typo reading holds (the form map, the full cache) is what the measured size grew by.
    assert 0.7 * held <= index.memory_bytes() - counted <= 1.4 * held


def test_a_function_not_allowed_the_snapshot_still_answers_from_the_concepts(counted):
    store, _ = counted
    retriever = Retriever(Refusing(store), Events())
    assert "cep-sudeste-cd-campinas" in ask(retriever)["block"]
    assert retriever.counters.get("SnapshotUnreadable", reason="access_denied") == 1
    assert retriever.counters.get("SnapshotNotWritten", reason="access_denied") == 1


def test_a_summary_keeps_why_its_version_was_written_and_a_row_from_before_reasons_reads_as_unknown(store):
    import zlib

    from knowledge.recall.snapshot import MAGIC, Summary

    stored = store.create(T, A, make_concept("horario-sac", description="O SAC atende das 8h às 20h."),
                          actor="engine", reason="created")
    summary = Summary.of(store.get(T, A, stored.name))
    assert (summary.actor, summary.reason) == ("engine", "created")
    index = Index()
    index.upsert(stored.name, summary.etag, store.get(T, A, stored.name).concept, stored.data)
    data = encode(Snapshot(T, A, index, 0.0, summaries={stored.name: summary}))
    assert decode(data, T, A).summaries[stored.name].reason == "created"
    # The same snapshot as a writer of before kept it: rows of ten fields (to valid_until), no reason.
    raw = zlib.decompress(data[len(MAGIC):])
    length = int.from_bytes(raw[:4], "big")
    header = json.loads(raw[4:4 + length])
    header["summaries"] = [row[:11] for row in header["summaries"]]
    head = json.dumps(header).encode()
    older = MAGIC + zlib.compress(len(head).to_bytes(4, "big") + head + raw[4 + length:])
    kept = decode(older, T, A).summaries[stored.name]
    assert kept.reason is None and kept.actor == "engine" and kept.etag == summary.etag
