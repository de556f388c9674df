"""The warm index a retrieval container keeps: no S3 request between refreshes, changes seen after
the window, unreadable concepts left out, and a large agent warmed up within the time Lambda gives."""

from __future__ import annotations

import pytest
from helpers.concepts import make_concept
from helpers.fakes import Clock, Events
from helpers.paths import DEMO

from knowledge.recall.retrieve import INVOCATION_RESERVE_SECONDS, LoadRequest, Retriever, RetrieveRequest

T, A = "default", "store-support"


# ------------------------------------------------------------------ the warm index


def ask(retriever, message="Moro em Campinas, o frete é grátis?"):
    return retriever.retrieve(RetrieveRequest(agent=A, session_id="s1", message=message))


def test_between_refreshes_a_warm_call_makes_no_s3_request(counted):
    store, calls = counted
    clock = Clock()
    retriever = Retriever(store, Events(), refresh_seconds=5, clock=clock)
    ask(retriever)
    cold = calls["s3"]
    # No snapshot yet: the snapshot's 404, config, one listing, the seven concepts, then the
    # snapshot written for the next cold container.
    assert cold == 1 + 2 + 1 + 7 + 1  # + vocabulary.yaml (404), read by the first listing
    for _ in range(20):
        clock.now += 0.2
        ask(retriever)
    assert calls["s3"] == cold
    clock.now += 5
    ask(retriever)
    assert calls["s3"] == cold + 2  # one listing of the change journal and knowledge.yaml If-None-Match; nothing changed


def test_new_changed_and_deleted_concepts_are_seen_after_the_window(counted):
    store, calls = counted
    clock = Clock()
    retriever = Retriever(store, Events(), refresh_seconds=5, clock=clock)
    assert "cep-sudeste-cd-campinas" in ask(retriever)["block"]
    current = store.get(T, A, "cep-sudeste-cd-campinas")
    store.replace(T, A, current.concept.replace(description="Campinas DC now ships next day."),
                  if_match=current.etag, actor="operator:ana", reason="edit")
    store.delete(T, A, "objecao-frete-caro", actor="operator:ana")
    store.create(T, A, make_concept("frete-campinas-sabado", description="Campinas frete also on Saturdays.",
                                    body="Frete to Campinas ships on Saturdays too."), actor="engine")
    assert "Campinas DC now ships next day." not in ask(retriever)["block"]  # still inside the window
    clock.now += 5
    before = calls["s3"]
    block = ask(retriever)["block"]
    assert "Campinas DC now ships next day." in block and "frete-campinas-sabado" in block
    assert "objecao-frete-caro" not in block
    assert calls["s3"] - before == 2 + 3  # the journal and the config, then only the three changed objects (one gone)


def test_retrieval_off_or_no_agent_gives_an_empty_answer_saying_why(counted):
    store, _ = counted
    retriever = Retriever(store, Events(), refresh_seconds=0)
    assert ask(retriever)["block"] and ask(retriever)["reason"] is None
    store.put_config(T, A, "knowledge:\n  retrieve: false\n", actor="operator:ana",
                     if_match=store.get_config(T, A).etag)
    assert ask(retriever) == {"block": "", "concepts": [], "priority": 77, "tool": None, "reason": "retrieval_off"}
    nobody = retriever.retrieve(RetrieveRequest(agent="nobody", session_id="s1", message="frete"))
    assert nobody == {"block": "", "concepts": [], "priority": 77, "tool": None, "reason": "unknown_agent"}


def test_load_knowledge_returns_the_concept_and_publishes_the_adoption_event(counted):
    store, _ = counted
    events = Events()
    retriever = Retriever(store, events)
    answer = retriever.load(LoadRequest(action="load_knowledge", agent=A, session_id="sess_9",
                                        name="cep-sudeste-cd-campinas"))
    assert answer["markdown"] == (DEMO / "cep-sudeste-cd-campinas.md").read_text()
    assert answer["concept"]["confidence"] == 0.7 and answer["concept"]["conflict"] is False
    assert events.published == [("knowledge_retrieved", {"tenant": T, "agent": A, "name": "cep-sudeste-cd-campinas",
                                                         "type": "fact", "session_id": "sess_9"})]
    assert retriever.counters.get("KnowledgeRetrieved", tenant=T, agent=A) == 1


def test_an_unreadable_concept_is_left_out_and_not_fetched_again(counted, s3, bucket):
    store, calls = counted
    s3.put_object(Bucket=bucket, Key="agents/default/store-support/concepts/broken.md", Body=b"not a concept")
    clock = Clock()
    retriever = Retriever(store, Events(), refresh_seconds=5, clock=clock)
    ask(retriever)
    clock.now += 5
    before = calls["s3"]
    ask(retriever)
    assert calls["s3"] - before == 2  # the journal and the config (If-None-Match) only
    assert "broken" not in retriever.knowledge(T, A).index.docs
    assert Retriever(store, Events()).knowledge(T, A).unreadable == {"broken": retriever.knowledge(T, A).unreadable["broken"]}
    # Then a cold container: its snapshot, the journal and the config; it knows from the snapshot: not fetched again.
    assert calls["s3"] - before == 2 + 3 + 1  # + vocabulary.yaml, once per cold container


class SlowStore:
    """The real store, with each parallel fetch taking `step` seconds (one by default) on the retriever's clock."""

    def __init__(self, store, clock):
        self._store, self._clock = store, clock
        self.step = 1

    def fetch_many(self, *args):
        self._clock.now += self.step
        return self._store.fetch_many(*args)

    def __getattr__(self, name):
        return getattr(self._store, name)


@pytest.fixture
def large_agent(counted, monkeypatch):
    """The demo agent plus one newer concept, fetched two at a time, each fetch a second."""
    import time

    from knowledge.recall import warm

    store, calls = counted
    time.sleep(1.1)  # listings tell time to the second
    store.create(T, A, make_concept("frete-campinas-sabado", description="Campinas frete also on Saturdays.",
                                    body="Frete to Campinas ships on Saturdays too."), actor="engine")
    monkeypatch.setattr(warm, "FETCH_CHUNK", 2)
    clock = Clock()
    calls.clear()
    return SlowStore(store, clock), clock, calls


def test_an_agent_too_large_for_one_call_is_answered_from_its_newest_concepts_then_caught_up(large_agent):
    store, clock, calls = large_agent
    retriever = Retriever(store, Events(), refresh_seconds=60, fetch_budget_seconds=1.5, clock=clock)
    first = ask(retriever, "Frete para Campinas no sábado?")
    # no snapshot, config, listing, vocabulary.yaml, and two chunks of two: the budget is spent
    assert calls["s3"] == 1 + 2 + 1 + 4
    assert retriever.counters.get("IndexIncomplete") == 1
    assert first["concepts"][0]["name"] == "frete-campinas-sabado"  # the newest came first
    assert "cep-sudeste-cd-campinas" not in first["block"]  # the oldest is not indexed yet
    second = ask(retriever)
    # the rest of the backlog, without listing again; then the snapshot
    assert calls["s3"] == 8 + 4 + 1
    assert "cep-sudeste-cd-campinas" in second["block"]
    ask(retriever)
    assert calls["s3"] == 13 and retriever.counters.get("IndexIncomplete") == 1


def test_the_time_lambda_has_left_caps_the_fetch_budget(large_agent):
    store, clock, calls = large_agent
    retriever = Retriever(store, Events(), refresh_seconds=60, fetch_budget_seconds=100, clock=clock)
    event = {"agent": A, "session_id": "s1", "message": "frete"}
    # Lambda's time left less the answer's reserve is the budget: 20 s, and each fetch takes 30 on the
    # retriever's clock (20 s of real time too, so a loaded machine's slow requests never reach it).
    store.step = 30
    retriever.handle(event, remaining_seconds=INVOCATION_RESERVE_SECONDS + 20)
    # vocabulary.yaml too; one chunk: at least one is always fetched, so a warm-up ends
    assert calls["s3"] == 1 + 2 + 1 + 2
    store.step = 1
    retriever.handle(event, remaining_seconds=60.0)
    assert calls["s3"] == 6 + 6 + 1


def test_load_knowledge_of_a_concept_the_warm_up_has_not_reached_fetches_it(large_agent):
    store, clock, calls = large_agent
    events = Events()
    retriever = Retriever(store, events, refresh_seconds=60, fetch_budget_seconds=0.5, clock=clock)
    answer = retriever.load(LoadRequest(action="load_knowledge", agent=A, session_id="s1",
                                        name="cep-sudeste-cd-campinas"))
    assert answer["markdown"] == (DEMO / "cep-sudeste-cd-campinas.md").read_text()
    assert [name for _, detail in events.published for name in [detail["name"]]] == ["cep-sudeste-cd-campinas"]
    # no snapshot, config, listing, vocabulary.yaml, one chunk, then that one concept
    assert calls["s3"] == 1 + 2 + 1 + 2 + 1


def test_a_mistyped_agent_costs_one_listing_per_refresh_window(counted):
    store, calls = counted
    clock = Clock()
    retriever = Retriever(store, Events(), refresh_seconds=5, clock=clock)
    typo = RetrieveRequest(agent="store-suport", session_id="s1", message="frete")
    assert retriever.retrieve(typo)["reason"] == "unknown_agent"
    first = calls["s3"]
    clock.now += 1
    assert retriever.retrieve(typo)["reason"] == "unknown_agent"
    assert calls["s3"] == first, "within the window the answer is the container's"
    store.put_config(T, "store-suport", "knowledge:\n  retrieve: false\n", actor="operator:ana")
    clock.now += 5
    assert retriever.retrieve(typo)["reason"] == "retrieval_off"
