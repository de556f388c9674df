"""The studio's list from the agent's snapshot: each concept's row and who wrote it kept in the
snapshot, a cold studio listing without reading a concept, the journal followed and swept."""

from __future__ import annotations

import pytest
from helpers.concepts import make_concept
from helpers.fakes import Clock, Events
from helpers.paths import DEMO
from helpers.snapshot import Refusing, answers, ask, warmed

from knowledge.curation.studio import Operator, Studio
from knowledge.recall.retrieve import Retriever
from knowledge.errors import SnapshotUnreadable
from knowledge.recall.snapshot import decode
from knowledge.store.concepts import snapshot_key

T, A = "default", "store-support"
ANA = Operator("ana", frozenset({T}))


def rows(studio):
    return studio.list(ANA, T, A)["concepts"]


def test_the_snapshot_keeps_each_concepts_row_and_who_wrote_its_current_version(counted):
    store, _ = counted
    current = store.get(T, A, "troca-em-30-dias")
    store.replace(T, A, current.concept.replace(occurrences=3), if_match=current.etag, actor="operator:ana",
                  reason="edit")
    warmed(store)
    snapshot = decode(store.get_snapshot(T, A).data, T, A)
    assert set(snapshot.summaries) == {path.stem for path in DEMO.glob("*.md")}
    edited, stored = snapshot.summaries["troca-em-30-dias"], store.get(T, A, "troca-em-30-dias")
    assert (edited.actor, edited.written_at, edited.occurrences, edited.etag) == (
        "operator:ana", stored.written_at, 3, stored.etag)
    assert len(edited.written_at) == len("2026-11-29T21:05:03.123456Z")
    conflict = snapshot.summaries["prazo-reembolso-pix"]
    assert conflict.conflict and conflict.actor == "engine" and conflict.problem is None


def test_a_snapshot_of_the_previous_format_is_unreadable_and_rebuilt(counted, s3, bucket):
    from knowledge.recall.snapshot import MAGIC

    store, _ = counted
    warmed(store)
    current = store.get_snapshot(T, A).data
    s3.put_object(Bucket=bucket, Key=snapshot_key(T, A), Body=b"KNOWLEDGE-SNAPSHOT/2\n" + current[len(MAGIC):])
    with pytest.raises(SnapshotUnreadable):
        decode(store.get_snapshot(T, A).data, T, A)
    retriever = Retriever(store, Events())
    ask(retriever)
    assert retriever.counters.get("SnapshotUnreadable") == 1 and retriever.counters.get("SnapshotWritten") == 1
    assert set(decode(store.get_snapshot(T, A).data, T, A).summaries) == {path.stem for path in DEMO.glob("*.md")}


def test_a_cold_studio_lists_from_the_snapshot_and_the_listing_reading_no_concept(counted):
    store, calls = counted
    built = rows(Studio(store))  # no snapshot: every concept read, and the snapshot written
    # snapshot (none), listing, seven concepts, knowledge.yaml (what stale means), the snapshot written, and
    # one listing each of what waits beside the concepts and of the concepts whose model words wait
    # (knowledge.store.waiting, knowledge.store.pending_words; no journal tells of them)
    assert calls["s3"] == 1 + 1 + 7 + 1 + 1 + 2
    calls.clear()
    cold = rows(Studio(store))
    assert calls["s3"] == 4  # the snapshot, one listing, one of what waits beside them, one of words pending
    assert cold == built
    assert {row["written_by"] for row in cold} == {"engine"}
    assert [row["written_at"] for row in cold] == sorted((row["written_at"] for row in cold), reverse=True)


def test_a_cold_studio_reads_only_the_concepts_changed_since_the_snapshot(counted):
    store, calls = counted
    warmed(store)  # the snapshot, written by a retrieval reader
    current = store.get(T, A, "cep-sudeste-cd-campinas")
    store.replace(T, A, current.concept.replace(description="Campinas DC now ships next day."),
                  if_match=current.etag, actor="operator:ana", reason="edit")
    store.delete(T, A, "objecao-frete-caro", actor="operator:ana")
    store.create(T, A, make_concept("frete-sabado", description="Frete aos sábados para Campinas."), actor="engine")
    calls.clear()
    listed = {row["name"]: row for row in rows(Studio(store))}
    # the snapshot, the listing, then the edited and the new concept, what waits beside them, and words pending
    assert calls["s3"] == 2 + 2 + 2
    assert "objecao-frete-caro" not in listed and listed["frete-sabado"]["written_by"] == "engine"
    edited = listed["cep-sudeste-cd-campinas"]
    assert (edited["description"], edited["written_by"]) == ("Campinas DC now ships next day.", "operator:ana")
    assert edited["written_at"] == store.get(T, A, "cep-sudeste-cd-campinas").written_at
    assert rows(Studio(store)) == list(listed.values())  # as one that read every concept


def test_the_studios_snapshot_serves_a_cold_retrieval_container(counted):
    store, calls = counted
    Studio(store).list(ANA, T, A)  # writes the snapshot, with the config it read
    full = Retriever(Refusing(store), Events(), refresh_seconds=60)  # a container that builds from every concept
    calls.clear()
    cold = Retriever(store, Events(), refresh_seconds=60)
    assert answers(cold) == answers(full)
    assert cold.counters.get("SnapshotLoaded") == 1
    calls.clear()
    again = Retriever(store, Events(), refresh_seconds=60)
    ask(again)
    # the snapshot (knowledge.yaml in it), the journal, knowledge.yaml If-None-Match (304), and
    # vocabulary.yaml: read once per cold container, never again on a quiet refresh
    assert calls["s3"] == 4


def test_a_studio_not_allowed_the_snapshot_lists_from_the_concepts(counted):
    store, _ = counted
    assert {row["name"] for row in rows(Studio(Refusing(store)))} == {path.stem for path in DEMO.glob("*.md")}


def test_search_from_a_snapshot_covers_the_body_by_words_and_name_and_description_by_substring(counted):
    store, _ = counted
    warmed(store)
    studio = Studio(store)

    def found(q):
        return {row["name"] for row in studio.list(ANA, T, A, q=q)["concepts"]}

    assert found("embalagem original") == {"troca-em-30-dias"}  # words only in the body: the index
    assert found("reemb") == {"prazo-reembolso-pix"}  # a prefix of a name
    assert "prazo-reembolso-pix" in found("REEMBOLSO pix")


def test_a_snapshot_whose_position_is_older_than_the_journal_is_kept_is_swept_not_followed(counted, s3, bucket):
    from knowledge.recall.warm import JOURNAL_TRUSTED_SECONDS
    from knowledge.store.keys import journal_prefix

    store, _ = counted
    warmed(store)
    store.create(T, A, make_concept("frete-sabado", description="Frete aos sábados para Campinas.",
                                    body="Pedidos para Campinas saem também aos sábados."), actor="engine")
    # The journal's lifecycle rule has expired every entry since the snapshot.
    for item in s3.list_objects_v2(Bucket=bucket, Prefix=journal_prefix(T, A))["Contents"]:
        s3.delete_object(Bucket=bucket, Key=item["Key"])
    import time

    within = Retriever(store, Events(), wall=lambda: time.time() + 60)
    assert "frete-sabado" not in ask(within, "frete sábado Campinas")["block"]  # stale: nothing said it changed
    later = Retriever(store, Events(), wall=lambda: time.time() + JOURNAL_TRUSTED_SECONDS + 60)
    assert "frete-sabado" in ask(later, "frete sábado Campinas")["block"]  # too old to trust: it lists


def test_a_warm_studio_list_reads_the_journal_only_and_a_full_listing_every_sweep(counted, s3, bucket):
    store, calls = counted
    clock = Clock()
    studio = Studio(store, sweep_seconds=60, clock=clock)
    rows(studio)
    calls.clear()
    rows(studio)
    assert calls["s3"] == 1  # the journal, empty since the last look
    current = store.get(T, A, "cep-sudeste-cd-campinas")
    store.replace(T, A, current.concept.replace(occurrences=9), if_match=current.etag, actor="engine",
                  reason="confirmed")
    store.delete(T, A, "objecao-frete-caro", actor="operator:ana")
    calls.clear()
    listed = {row["name"]: row for row in rows(studio)}
    assert calls["s3"] == 1 + 2  # the journal, then each concept it names (the deleted one answers 404)
    assert listed["cep-sudeste-cd-campinas"]["occurrences"] == 9 and "objecao-frete-caro" not in listed
    # A writer killed before its journal entry: stale until the next full listing, never longer.
    s3.delete_object(Bucket=bucket, Key=f"agents/{T}/{A}/concepts/rastreio-pedido.md")
    assert "rastreio-pedido" in {row["name"] for row in rows(studio)}
    clock.now += 60
    calls.clear()
    assert "rastreio-pedido" not in {row["name"] for row in rows(studio)}
    assert calls["s3"] == 1 + 2  # the listing, what waits beside the concepts, and words pending


def test_a_row_written_by_hand_with_odd_metadata_falls_back_to_s3s_own_time_and_no_writer(counted, s3, bucket):
    store, _ = counted
    s3.put_object(Bucket=bucket, Key=f"agents/{T}/{A}/concepts/horario-loja.md",
                  Body=make_concept("horario-loja").render().encode(),
                  Metadata={"actor": "<script>", "written-at": "amanha 9h"})
    row = next(r for r in rows(Studio(store)) if r["name"] == "horario-loja")
    head = s3.head_object(Bucket=bucket, Key=f"agents/{T}/{A}/concepts/horario-loja.md")
    assert row["written_by"] is None
    assert row["written_at"] == head["LastModified"].strftime("%Y-%m-%dT%H:%M:%S.000000Z")


def test_a_warm_list_of_an_agent_that_recalls_shared_knowledge_asks_one_more_journal_and_nothing_else(counted):
    """What it costs to say which rows override a shared concept: the shared scope's own journal,
    once per list once warm (its rows are held like an agent's); an agent that does not opt in asks
    nothing more."""
    from knowledge.store.keys import SHARED

    store, calls = counted
    store.create(T, SHARED, make_concept("troca-em-30-dias", description="Troca em todas as lojas."),
                 actor="operator:ana")
    store.create(T, SHARED, make_concept("horario-lojas", description="Lojas abrem às 9h."), actor="operator:ana")
    studio = Studio(store)
    alone = studio.list(ANA, T, A)
    assert alone["shared_recalled"] is None and not any(row["shadows_shared"] for row in alone["concepts"])
    calls.clear()
    studio.list(ANA, T, A)
    quiet_alone = calls["s3"]
    current = store.get_config(T, A)
    store.put_config(T, A, current.text.replace("  retrieve: true\n", "  retrieve: true\n  shared: true\n"),
                     actor="operator:ana", if_match=current.etag)
    opted = studio.list(ANA, T, A)
    assert opted["shared_recalled"] == 1
    assert [row["name"] for row in opted["concepts"] if row["shadows_shared"]] == ["troca-em-30-dias"]
    calls.clear()
    studio.list(ANA, T, A)
    assert (quiet_alone, calls["s3"]) == (1, 2)  # the agent's journal; then the shared scope's too
