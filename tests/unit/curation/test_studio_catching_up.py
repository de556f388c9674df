"""The studio's answers within their budget however far behind the snapshot is: a list, a search
or the agents overview answered partial says how many changes it has not read, the next request
reads on, and once caught up the snapshot is written; the scheduled pass keeps it current."""

from __future__ import annotations

from helpers.concepts import make_concept
from helpers.fakes import Clock
from helpers.snapshot import Refusing, warmed

from knowledge.curation.studio import Operator, Studio
from knowledge.operation.snapshots import SnapshotPass, parse_snapshot_request
from knowledge.recall.snapshot import decode
from shared import deadline

T, A = "default", "store-support"
ANA = Operator("ana", frozenset({T}))
EDITED = ("cep-sudeste-cd-campinas", "troca-em-30-dias", "rastreio-pedido")
NEW = ("frete-sabado", "horario-loja")


def bulk_writes(store, round=0):
    """Five engine writes after the snapshot: two new concepts, then three changed. The changed ones
    are the newest, so a list that reads two first (newest first; a tie within S3's second, by name)
    reads changed ones, whichever second each write falls in."""
    for name in NEW:
        name = f"{name}-{round}" if round else name
        store.create(T, A, make_concept(name, description=f"New: {name}."), actor="engine")
    for name in EDITED:
        current = store.get(T, A, name)
        store.replace(T, A, current.concept.replace(description=f"Changed: {name}."), if_match=current.etag,
                      actor="engine", reason="merged")


def by_name(answer):
    return {row["name"]: row for row in answer["concepts"]}


def everything(store):
    """The list as a studio that reads every concept answers it (no snapshot to start from)."""
    return by_name(Studio(Refusing(store)).list(ANA, T, A))


def test_a_list_answered_partial_says_so_shows_the_last_known_rows_and_the_next_ones_catch_up(counted):
    store, _ = counted
    warmed(store)
    bulk_writes(store)
    truth = everything(store)
    studio = Studio(store, catch_up_seconds=0, fetch_chunk=2)  # the budget spent after one chunk

    first = studio.list(ANA, T, A)
    assert first["catching_up"] == 3
    rows = by_name(first)
    # What was read is current; what was not is as the snapshot knew it, never half-known;
    # a new concept not read yet is not listed.
    read = [name for name in (*EDITED, *NEW) if name in rows and rows[name] == truth[name]]
    unread = [name for name in EDITED if rows[name]["description"] != f"Changed: {name}."]
    assert len(read) == 2 and len(unread) + len([n for n in NEW if n not in rows]) == 3
    for name in unread:
        assert rows[name]["etag"] != truth[name]["etag"] and rows[name]["description"] != truth[name]["description"]

    second = studio.list(ANA, T, A)
    assert second["catching_up"] == 1
    third = studio.list(ANA, T, A)
    assert third["catching_up"] == 0 and by_name(third) == truth


def test_a_search_answered_partial_says_so_and_finds_what_it_has_read(counted):
    store, _ = counted
    warmed(store)
    bulk_writes(store)
    studio = Studio(store, catch_up_seconds=0, fetch_chunk=2)
    answers = [studio.list(ANA, T, A, q="new") for _ in range(3)]
    assert [a["catching_up"] for a in answers] == [3, 1, 0]
    assert set(by_name(answers[-1])) == set(NEW)


def test_the_agents_overview_answered_partial_says_so_per_agent_and_the_next_catches_up(counted):
    store, _ = counted
    warmed(store)
    bulk_writes(store)
    studio = Studio(store, catch_up_seconds=0, fetch_chunk=2)
    (first,) = studio.agents(ANA, T)
    assert (first["name"], first["catching_up"]) == (A, 3)
    assert 7 <= first["concepts"] < 9  # a new concept not read yet is not counted
    left = [first["catching_up"]]
    while left[-1] and len(left) < 6:  # each answer reads on (two at a time here, more on a quiet machine)
        (last,) = studio.agents(ANA, T)
        left.append(last["catching_up"])
    assert left == sorted(left, reverse=True) and len(set(left)) == len(left)  # every answer read some
    assert (last["concepts"], last["catching_up"]) == (9, 0)


def test_once_caught_up_the_studio_writes_the_snapshot_and_a_cold_studio_reads_no_concept(counted):
    store, calls = counted
    warmed(store)
    for round in range(7):  # sixteen concepts changed or more (3 edited, 14 new): a newer snapshot
        bulk_writes(store, round)
    truth = everything(store)
    studio = Studio(store, catch_up_seconds=0, fetch_chunk=2, clock=Clock())  # time left to write it
    while studio.list(ANA, T, A)["catching_up"]:
        pass
    studio.list(ANA, T, A)
    assert set(decode(store.get_snapshot(T, A).data, T, A).summaries) == set(truth)
    calls.clear()
    cold = Studio(store, catch_up_seconds=0, fetch_chunk=2).list(ANA, T, A)
    assert cold["catching_up"] == 0 and by_name(cold) == truth
    assert calls["s3"] == 4  # the snapshot, one listing, one of what waits beside them, one of words pending


def test_a_list_that_reads_its_backlog_never_loses_a_write_made_meanwhile(counted):
    store, _ = counted
    warmed(store)
    bulk_writes(store)
    clock = Clock()
    studio = Studio(store, catch_up_seconds=0, fetch_chunk=2, clock=clock)
    studio.list(ANA, T, A)
    store.create(T, A, make_concept("pix-instantaneo", description="Pix cai na hora."), actor="engine")
    current = store.get(T, A, "horario-loja")
    store.replace(T, A, current.concept.replace(description="Again."), if_match=current.etag, actor="engine",
                  reason="merged")
    store.delete(T, A, "objecao-frete-caro", actor="operator:ana")
    for _ in range(6):
        answer = studio.list(ANA, T, A)
    assert answer["catching_up"] == 0 and by_name(answer) == everything(store)


def test_the_snapshot_pass_brings_every_agents_snapshot_up_to_date(counted):
    store, calls = counted
    warmed(store)
    bulk_writes(store)
    store.create(T, "loja-centro", make_concept("horario-centro", description="Abre às 9h."), actor="engine")
    store.create("loja-b", "outra", make_concept("segredo", description="De outro tenant."), actor="engine")
    report = SnapshotPass(Studio(store), store).run()
    assert report.as_dict() == {"agents": 3, "current": 3, "behind": 0, "changes_left": 0, "failed": 0,
                                "complete": True}
    # The snapshot, one listing, one of what waits beside the concepts and one of words pending; an agent with
    # no knowledge.yaml also asks for it once (the snapshot holds the config an agent has, not that it has
    # none: "stale" needs its settings).
    for tenant, agent, requests in ((T, A, 4), (T, "loja-centro", 5), ("loja-b", "outra", 5)):
        calls.clear()
        cold = Studio(store).list(Operator("ana", frozenset({tenant})), tenant, agent)
        assert cold["catching_up"] == 0 and calls["s3"] == requests, agent
    assert by_name(Studio(store).list(ANA, T, A)) == everything(store)


def test_a_pass_out_of_time_stops_before_an_agent_and_says_it_is_incomplete(counted):
    store, _ = counted
    warmed(store)
    bulk_writes(store)
    before = store.get_snapshot(T, A).etag
    import time

    with deadline.until(time.monotonic() + 1.0):  # less than a snapshot's write needs
        report = SnapshotPass(Studio(store), store).run()
    assert (report.agents, report.complete) == (0, False)
    assert store.get_snapshot(T, A).etag == before


def test_the_snapshot_event_is_validated():
    import pytest

    from shared.errors import InvalidRequest

    assert parse_snapshot_request({}) is None and parse_snapshot_request({"tenant": "loja-b"}) == "loja-b"
    for bad in ([], {"tenant": "Loja B"}, {"agent": "x"}, {"tenant": "../x"}):
        with pytest.raises(InvalidRequest):
            parse_snapshot_request(bad)
