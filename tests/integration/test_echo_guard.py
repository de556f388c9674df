"""The echo guard through the real ExtractFunction and ConsolidateFunction: the store restating
what its session was shown is no independent source; anything else still counts."""

from __future__ import annotations

import json
import uuid
from datetime import datetime, timezone

import pytest
from helpers.aws import drain, new_queue
from helpers.concepts import make_concept
from helpers.handlers import LambdaContext, load_event, load_handler
from helpers.turns import candidates_event

from knowledge.format.sighting import parse_sighting

T, A = "default", "store-support"
NAME = "entrega-manaus-2-dias"
DESCRIPTION = "Entregamos em Manaus em 2 dias úteis."
BODY = "A loja entrega pedidos para Manaus em 2 dias úteis após a confirmação do pagamento."
SAID = "Entregamos em Manaus em 2 dias úteis, sim!"
SEEDED = datetime(2026, 11, 1, 12, 0, tzinfo=timezone.utc)
CONFIG = "knowledge:\n  types: [fact, entity, procedure, policy, objection]\n"


def answer(evidence: str, type_: str = "fact") -> str:
    return json.dumps([{"name": NAME, "type": type_, "description": DESCRIPTION, "body": BODY,
                        "evidence": evidence}], ensure_ascii=False)


def turn(session: str, messages: list[dict], shown: dict | None = None) -> dict:
    event = load_event("turn-complete.json")
    body = {"tenant": T, "agent": A, "session_id": session, "turn_id": "t1",
            "completed_at": "2026-11-20T14:05:31Z", "messages": messages}
    if shown is not None:
        body["shown"] = shown
    event["Records"][0]["body"] = json.dumps(body, ensure_ascii=False)
    return event


ASSISTANT_SAYS = [{"role": "user", "content": "vocês entregam em Manaus? em quanto tempo?"},
                  {"role": "assistant", "content": SAID}]



@pytest.fixture
def loop(monkeypatch, store, bucket, sessions_bucket, candidates_queue, sqs, bus, model):
    """extract -> CandidatesQueue -> consolidate, with the concept already learned from one session."""
    store.put_config(T, A, CONFIG, actor="operator:demo")
    store.create(T, A, make_concept(NAME, description=DESCRIPTION, body=BODY, sources=("sess_0",),
                                    created_at=SEEDED, updated_at=SEEDED), actor="engine", reason="created")
    env = dict(KNOWLEDGE_BUCKET=bucket, SESSIONS_BUCKET=sessions_bucket, UTILITY_MODEL="openai:test-model",
               OPENAI_BASE_URL=model.base_url, EVENT_BUS_NAME=bus["name"])
    service = f"knowledge-echo-{uuid.uuid4().hex[:6]}"  # a logger of its own: this test's stdout
    extract = load_handler("extract", monkeypatch, dict(env, CANDIDATES_QUEUE_URL=candidates_queue),
                           POWERTOOLS_SERVICE_NAME=service)
    consolidate = load_handler("consolidate", monkeypatch, env)

    def run(event: dict, reply: str) -> list[str]:
        model.responder = lambda request: reply
        assert extract.lambda_handler(event, LambdaContext()) == {"batchItemFailures": []}
        bodies = [m["Body"] for m in drain(sqs, candidates_queue)]
        assert consolidate.lambda_handler(candidates_event(bodies), LambdaContext()) == {"batchItemFailures": []}
        return bodies

    drain(sqs, bus["queue"])
    return run


def counts(store) -> tuple:
    concept = store.get(T, A, NAME).concept
    return concept.confidence, concept.sources, concept.occurrences


def test_the_assistant_restating_a_concept_its_session_was_shown_adds_no_source(loop, store, sqs, bus, capsys):
    bodies = loop(turn("sess_1", ASSISTANT_SAYS, shown={"retrieved": [NAME, "outra-coisa"]}), answer(SAID))
    assert [parse_sighting(b).echo for b in bodies] == [True]
    assert counts(store) == (0.6, ("sess_0",), 1)
    assert [v.reason for v in store.versions(T, A, NAME)] == ["created"]  # nothing written, nothing announced
    assert drain(sqs, bus["queue"]) == []
    logs = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    assert any(entry.get("CandidateEchoed") == [1.0] for entry in logs)
    assert not any("TurnUnguarded" in entry for entry in logs)


def test_a_concept_loaded_and_quoted_from_the_load_knowledge_answer_adds_no_source(loop, store):
    messages = [{"role": "user", "content": "e pra Manaus?"},
                {"role": "tool", "content": f"---\nname: {NAME}\n---\n\n{BODY}"},
                {"role": "assistant", "content": "Um instante, já confirmo o prazo para você."}]
    bodies = loop(turn("sess_1", messages, shown={"loaded": [NAME]}), answer(BODY))
    assert [parse_sighting(b).echo for b in bodies] == [True]
    assert counts(store) == (0.6, ("sess_0",), 1)


def test_a_session_that_was_shown_other_concepts_still_counts(loop, store):
    loop(turn("sess_1", ASSISTANT_SAYS, shown={"retrieved": ["frete-gratis"], "loaded": ["troca-30-dias"]}),
         answer(SAID))
    assert counts(store) == (0.7, ("sess_0", "sess_1"), 2)


def test_a_customers_statement_in_a_session_that_was_shown_the_concept_still_counts(loop, store):
    said = "uma amiga disse que vocês entregam em Manaus em 2 dias úteis"
    messages = [{"role": "user", "content": said}, {"role": "assistant", "content": "Posso ajudar em algo mais?"}]
    bodies = loop(turn("sess_1", messages, shown={"retrieved": [NAME]}), answer(said, type_="objection"))
    assert [parse_sighting(b).echo for b in bodies] == [None]
    assert counts(store) == (0.7, ("sess_0", "sess_1"), 2)


def test_a_turn_without_a_shown_record_gets_no_guard_and_is_counted(loop, store, capsys):
    loop(turn("sess_1", ASSISTANT_SAYS), answer(SAID))
    assert counts(store) == (0.7, ("sess_0", "sess_1"), 2)
    output = capsys.readouterr().out
    logs = [json.loads(line) for line in output.splitlines() if line.startswith("{")]
    assert any(entry.get("TurnUnguarded") == [1.0] for entry in logs)
    assert "Manaus" not in output


def test_an_echo_never_creates_a_concept_the_store_no_longer_has(loop, store):
    store.delete(T, A, NAME, actor="operator:ana")
    loop(turn("sess_1", ASSISTANT_SAYS, shown={"retrieved": [NAME]}), answer(SAID))
    assert store.find(T, A, NAME) is None


def test_four_echoes_leave_the_confidence_where_it_was_and_two_independent_sessions_raise_it(loop, store):
    # The loop: a wrong claim injected into four sessions and repeated each time.
    for session in ("sess_1", "sess_2", "sess_3", "sess_4"):
        loop(turn(session, ASSISTANT_SAYS, shown={"retrieved": [NAME]}), answer(SAID))
    assert counts(store) == (0.6, ("sess_0",), 1)
    for session in ("sess_5", "sess_6"):
        loop(turn(session, ASSISTANT_SAYS), answer(SAID))
    assert counts(store) == (0.8, ("sess_0", "sess_5", "sess_6"), 3)


def test_a_backfill_replay_of_an_archived_turn_keeps_its_guard(loop, monkeypatch, store, bucket, sessions_bucket,
                                                               sqs, model):
    loop(turn("sess_1", ASSISTANT_SAYS, shown={"retrieved": [NAME]}), answer(SAID))
    replay_queue = new_queue(sqs, fifo=True)
    backfill = load_handler("backfill", monkeypatch, dict(
        KNOWLEDGE_BUCKET=bucket, SESSIONS_BUCKET=sessions_bucket, UTILITY_MODEL="openai:test-model",
        OPENAI_BASE_URL=model.base_url, CANDIDATES_QUEUE_URL=replay_queue))
    result = backfill.lambda_handler({"agent": A, "since": "2026-01-01T00:00:00Z"}, LambdaContext())
    assert result["ok"] and result["turns"] == 1
    assert [parse_sighting(m["Body"]).echo for m in drain(sqs, replay_queue)] == [True]
