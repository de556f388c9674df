"""search_knowledge and save_knowledge through the real RetrieveFunction handler: the ranked hits
past the block's floor, and an insight saved mid-session learned exactly as extraction learns one
(the gates on the session's archived turns, PII, consolidation by the real ConsolidateFunction)."""

from __future__ import annotations

import json
import uuid
from datetime import datetime, timedelta, timezone

import pytest
from helpers.aws import drain
from helpers.handlers import LambdaContext, load_handler
from helpers.paths import DEMO, ROOT

from knowledge.format.concept import parse
from knowledge.format.turn import Turn
from knowledge.store.archive import TurnArchive
from knowledge_dev.poller import sqs_event

T, A, SESSION = "default", "store-support", "sess_tools_1"
SAID = "Despachamos todo pedido pago até as 14h no mesmo dia útil, de segunda a sexta."
SAVE = {"action": "save_knowledge", "tenant": T, "agent": A, "session_id": SESSION, "name": "despacho-mesmo-dia",
        "description": "Orders paid by 14h ship the same business day.", "type": "fact",
        "body": "Orders paid by 14h (Mon-Fri) are dispatched the same business day.",
        "evidence": "pedido pago até as 14h no mesmo dia útil"}


@pytest.fixture
def env(store, bucket, sessions_bucket, candidates_queue, bus):
    store.put_config(T, A, (DEMO / "knowledge.yaml").read_text(), actor="operator:demo")
    for path in sorted(DEMO.glob("*.md")):
        store.create(T, A, parse(path.read_text()), actor="engine")
    return dict(KNOWLEDGE_BUCKET=bucket, SESSIONS_BUCKET=sessions_bucket, CANDIDATES_QUEUE_URL=candidates_queue,
                EVENT_BUS_NAME=bus["name"])


@pytest.fixture
def retrieve(monkeypatch, env):
    return load_handler("retrieve", monkeypatch, env,
                        POWERTOOLS_SERVICE_NAME=f"knowledge-retrieve-{uuid.uuid4().hex[:6]}")


def call(handler, event: dict) -> dict:
    return handler.lambda_handler(event, LambdaContext())


def archive(s3, sessions_bucket, *, session=SESSION, tenant=T, agent=A, turn_id="turn_0001", said=SAID,
            customer="Até que horas posso pagar para sair hoje?", shown=None) -> Turn:
    moment = (datetime.now(timezone.utc) - timedelta(minutes=5)).strftime("%Y-%m-%dT%H:%M:%SZ")
    turn = Turn.model_validate({"tenant": tenant, "agent": agent, "session_id": session, "turn_id": turn_id,
                                "completed_at": moment, "shown": shown,
                                "messages": [{"role": "user", "content": customer},
                                             {"role": "assistant", "content": said}]})
    TurnArchive(s3, sessions_bucket).put(turn)
    return turn


def events(sqs, bus) -> list[dict]:
    return [json.loads(m["Body"]) for m in drain(sqs, bus["queue"])]


# ------------------------------------------------------------------ search_knowledge

def test_search_ranks_past_the_floor_and_marks_what_the_block_would_carry(retrieve, sqs, bus):
    query = "Moro em Campinas, o frete é grátis para o meu pedido?"  # a weak match ranks below the floor
    block = call(retrieve, {"tenant": T, "agent": A, "session_id": "s1", "message": query})
    answer = call(retrieve, {"action": "search_knowledge", "tenant": T, "agent": A, "session_id": "s1",
                             "query": query, "limit": 50})
    hits = answer["hits"]
    assert [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)
    in_block = {c["name"] for c in block["concepts"] if not c["linked"]}
    assert in_block and in_block <= {h["name"] for h in hits if h["injected"]}
    assert any(not h["injected"] for h in hits), "a match below the floor is listed, marked not injected"
    assert hits[0]["description"] and hits[0]["type"] in ("fact", "policy", "procedure", "entity", "objection")
    [event] = events(sqs, bus)
    assert event["detail-type"] == "knowledge_searched"
    assert event["detail"] == {"tenant": T, "agent": A, "session_id": "s1", "names": [h["name"] for h in hits]}
    assert "Campinas" not in json.dumps(event)


def test_search_honours_the_limit(retrieve):
    answer = call(retrieve, {"action": "search_knowledge", "agent": A, "session_id": "s1",
                             "query": "frete entrega prazo troca", "limit": 1})
    assert len(answer["hits"]) == 1


def test_search_finds_nothing_where_retrieval_is_off_and_no_agent_in_another_tenant(retrieve, store):
    store.put_config(T, "quiet-agent", "knowledge:\n  retrieve: false\n", actor="operator:t")
    answer = call(retrieve, {"action": "search_knowledge", "tenant": T, "agent": "quiet-agent",
                             "session_id": "s1", "query": "frete grátis Campinas"})
    assert answer == {"hits": []}
    answer = call(retrieve, {"action": "search_knowledge", "tenant": "other-store", "agent": A,
                             "session_id": "s1", "query": "frete grátis Campinas"})
    assert answer["error"]["code"] == "unknown_agent"


@pytest.mark.parametrize("change, field", [({"query": ""}, "query"), ({"limit": 0}, "limit"),
                                           ({"limit": 51}, "limit"), ({"q": "x"}, "q")])
def test_a_bad_search_is_refused_naming_the_field(retrieve, change, field):
    event = {"action": "search_knowledge", "agent": A, "session_id": "s1", "query": "frete", **change}
    answer = call(retrieve, event)
    assert answer["error"]["code"] == "invalid_request" and answer["error"]["message"].startswith(f"{field}:")


def test_an_unknown_action_is_refused(retrieve):
    answer = call(retrieve, {"action": "delete_knowledge", "agent": A, "session_id": "s1"})
    assert answer["error"]["code"] == "invalid_request" and "save_knowledge" in answer["error"]["message"]


# ------------------------------------------------------------------ save_knowledge

def consolidate_all(monkeypatch, env, sqs, candidates_queue) -> list[dict]:
    messages = drain(sqs, candidates_queue)
    consolidate = load_handler("consolidate", monkeypatch, env)
    assert consolidate.lambda_handler(sqs_event(messages, "arn:aws:sqs:us-east-1:123456789012:c.fifo"),
                                      LambdaContext()) == {"batchItemFailures": []}
    return messages


def test_a_saved_insight_is_consolidated_as_an_observed_sighting_with_its_evidence(
        retrieve, monkeypatch, env, s3, sessions_bucket, store, sqs, candidates_queue, bus):
    turn = archive(s3, sessions_bucket)
    answer = call(retrieve, {**SAVE, "type": "policy"})
    assert answer["save_id"].startswith(f"{SESSION}~")
    assert {k: v for k, v in answer.items() if k != "save_id"} == {
        "name": "despacho-mesmo-dia", "type": "policy", "turn_id": "turn_0001", "status": "queued", "echo": False,
        "redacted": {}}
    [saved] = events(sqs, bus)
    assert saved["detail-type"] == "knowledge_saved"
    assert saved["detail"] == {"tenant": T, "agent": A, "name": "despacho-mesmo-dia", "type": "policy",
                               "session_id": SESSION, "turn_id": "turn_0001"}
    [message] = consolidate_all(monkeypatch, env, sqs, candidates_queue)
    stored = store.get(T, A, "despacho-mesmo-dia")
    concept = parse(stored.data.decode())
    # Never policy, whatever type it was saved as: provenance and confidence are the engine's.
    assert (concept.provenance, concept.confidence, list(concept.sources), concept.occurrences) == (
        "observed", 0.6, [SESSION], 1)
    evidence = json.loads(message["Body"])["evidence"]
    quote = turn.messages[evidence["message"]].content[evidence["start"]:evidence["end"]]
    assert quote == "pedido pago até as 14h no mesmo dia útil"
    metadata = s3.head_object(Bucket=env["KNOWLEDGE_BUCKET"], Key=f"agents/{T}/{A}/concepts/despacho-mesmo-dia.md")
    assert metadata["Metadata"].get("evidence"), "the version says where its evidence is, as extraction's do"
    learned = [e for e in events(sqs, bus) if e["detail-type"] == "knowledge_learned"]
    assert [e["detail"]["name"] for e in learned] == ["despacho-mesmo-dia"]


def test_saving_the_same_insight_again_is_the_same_sighting(
        retrieve, monkeypatch, env, s3, sessions_bucket, store, sqs, candidates_queue):
    archive(s3, sessions_bucket)
    call(retrieve, SAVE)
    consolidate_all(monkeypatch, env, sqs, candidates_queue)
    call(retrieve, SAVE)
    consolidate_all(monkeypatch, env, sqs, candidates_queue)
    assert parse(store.get(T, A, "despacho-mesmo-dia").data.decode()).occurrences == 1


@pytest.mark.parametrize("change, reason", [
    ({"evidence": "entregamos aos domingos em todo o Brasil"}, "evidence_not_found"),
    ({"evidence": "Até que horas posso pagar para sair hoje"}, "evidence_not_from_store"),
    ({"name": "ana-souza@example.com"}, "bad_name"),
    ({"description": "two\nlines"}, "schema"),
])
def test_an_insight_a_gate_refuses_is_not_queued(retrieve, s3, sessions_bucket, sqs, candidates_queue,
                                                 change, reason):
    archive(s3, sessions_bucket)
    answer = call(retrieve, {**SAVE, **change})
    assert answer["error"]["code"] == "gated" and f"the {reason} gate" in answer["error"]["message"]
    assert drain(sqs, candidates_queue) == []


def test_a_type_the_agent_does_not_learn_is_refused(retrieve, store, s3, sessions_bucket, sqs, candidates_queue):
    store.put_config(T, "facts-only", "knowledge:\n  types: [fact]\n", actor="operator:t")
    archive(s3, sessions_bucket, agent="facts-only")
    answer = call(retrieve, {**SAVE, "agent": "facts-only", "type": "procedure"})
    assert answer["error"]["code"] == "gated" and "type_not_allowed" in answer["error"]["message"]


def test_personal_data_in_an_insight_is_redacted_before_it_is_queued(retrieve, s3, sessions_bucket, sqs,
                                                                     candidates_queue):
    archive(s3, sessions_bucket)
    answer = call(retrieve, {**SAVE, "body": "Same-day dispatch; ask ana.souza@example.com for exceptions."})
    assert answer["redacted"] == {"email": 1}
    [message] = drain(sqs, candidates_queue)
    assert "ana.souza@example.com" not in message["Body"]


def test_an_insight_restating_what_the_session_was_shown_is_an_echo(retrieve, monkeypatch, env, s3,
                                                                    sessions_bucket, store, sqs, candidates_queue):
    archive(s3, sessions_bucket, shown={"retrieved": ["despacho-mesmo-dia"]})
    assert call(retrieve, SAVE)["echo"] is True
    consolidate_all(monkeypatch, env, sqs, candidates_queue)
    assert "despacho-mesmo-dia" not in {c.name for c in store.list(T, A)}


def test_a_save_is_refused_where_the_agent_does_not_learn(retrieve, store, s3, sessions_bucket):
    store.put_config(T, "not-learning", "knowledge:\n  extract: false\n", actor="operator:t")
    archive(s3, sessions_bucket, agent="not-learning")
    answer = call(retrieve, {**SAVE, "agent": "not-learning"})
    assert answer["error"]["code"] == "disabled"


def test_a_save_grounds_only_on_this_tenants_session(retrieve, s3, sessions_bucket, sqs, candidates_queue):
    archive(s3, sessions_bucket, tenant="other-store")
    archive(s3, sessions_bucket, session="sess_someone_else")
    answer = call(retrieve, SAVE)
    assert answer["error"]["code"] == "not_found" and "send the turn first" in answer["error"]["message"]
    assert "sess_someone_else" not in answer["error"]["message"]
    assert drain(sqs, candidates_queue) == []


def test_a_save_names_the_turn_when_it_wants_one(retrieve, s3, sessions_bucket):
    archive(s3, sessions_bucket, turn_id="turn_0001")
    archive(s3, sessions_bucket, turn_id="turn_0002", said="Hoje não temos retirada na loja.")
    assert call(retrieve, {**SAVE, "turn_id": "turn_0001"})["turn_id"] == "turn_0001"
    answer = call(retrieve, {**SAVE, "turn_id": "turn_0002"})
    assert answer["error"]["code"] == "gated"


def test_a_save_logs_identifiers_only(retrieve, s3, sessions_bucket, caplog):
    archive(s3, sessions_bucket)
    with caplog.at_level("INFO"):
        call(retrieve, SAVE)
    logged = [record for record in caplog.records if record.getMessage() == "knowledge saved"]
    assert [(record.concept, record.session_id, record.agent) for record in logged] == [
        ("despacho-mesmo-dia", SESSION, A)]
    assert not any("14h" in record.getMessage() or "14h" in str(vars(record)) for record in caplog.records)


def test_an_insight_in_another_language_than_the_agents_is_kept_and_counted(retrieve, store, s3, sessions_bucket,
                                                                             capsys):
    store.put_config(T, "english-agent", "knowledge:\n  language: en\n", actor="operator:t")
    archive(s3, sessions_bucket, agent="english-agent")
    answer = call(retrieve, {**SAVE, "agent": "english-agent",
                             "description": "Pedidos pagos até as 14h saem no mesmo dia útil, de segunda a sexta.",
                             "body": ("Todo pedido pago até as 14h é despachado no mesmo dia útil; você não paga mais "
                                      "por isso, e também vale quando o pedido tem mais de um item.")})
    assert answer["status"] == "queued"
    metrics = [json.loads(line) for line in capsys.readouterr().out.splitlines() if "CandidateOtherLanguage" in line]
    assert [m["CandidateOtherLanguage"] for m in metrics] == [[1.0]]


# ------------------------------------------------------------------ errors that name the problem

TYPO = "store-suport"


def test_every_call_for_a_mistyped_agent_answers_unknown_agent_not_an_empty_agent(retrieve, sqs, bus):
    block = call(retrieve, {"tenant": T, "agent": TYPO, "session_id": "s1", "message": "frete"})
    # The engine's turn never fails: an empty block, no tool, and why.
    assert block == {"block": "", "concepts": [], "priority": 77, "tool": None, "reason": "unknown_agent"}
    for event in ({"action": "load_knowledge", "tenant": T, "agent": TYPO, "session_id": "s1",
                   "name": "cep-sudeste-cd-campinas"},
                  {"action": "search_knowledge", "tenant": T, "agent": TYPO, "session_id": "s1", "query": "frete"},
                  {**SAVE, "agent": TYPO}):
        error = call(retrieve, event)["error"]
        assert error["code"] == "unknown_agent", (event["action"], error)
        assert TYPO in error["message"] and "knowledge.yaml" in error["message"]
    assert events(sqs, bus) == []


def test_an_agent_with_concepts_but_retrieval_off_is_off_not_unknown(retrieve, store):
    store.put_config(T, A, "knowledge:\n  retrieve: false\n", actor="operator:t",
                     if_match=store.get_config(T, A).etag)
    block = call(retrieve, {"tenant": T, "agent": A, "session_id": "s1", "message": "frete"})
    assert block["reason"] == "retrieval_off" and block["tool"] is None
    error = call(retrieve, {"action": "load_knowledge", "tenant": T, "agent": A, "session_id": "s1",
                            "name": "cep-sudeste-cd-campinas"})["error"]
    assert error["code"] == "not_found" and "retrieval is off" in error["message"]


def test_retrieval_on_offers_load_knowledge_even_when_nothing_is_relevant(retrieve):
    answer = call(retrieve, {"tenant": T, "agent": A, "session_id": "s1", "message": "zzz qwerty"})
    assert answer["block"] == "" and answer["tool"]["name"] == "load_knowledge" and answer["reason"] is None


def test_a_save_past_the_window_names_the_sessions_last_turn_and_when_it_completed(retrieve, s3, sessions_bucket):
    old = Turn.model_validate({"tenant": T, "agent": A, "session_id": SESSION, "turn_id": "turn_0004",
                               "completed_at": (datetime.now(timezone.utc) - timedelta(days=3)).strftime(
                                   "%Y-%m-%dT%H:%M:%SZ"),
                               "messages": [{"role": "user", "content": "Até que horas?"},
                                            {"role": "assistant", "content": SAID}]})
    TurnArchive(s3, sessions_bucket).put(old)
    error = call(retrieve, SAVE)["error"]
    assert error["code"] == "not_found"
    assert "turn_0004" in error["message"] and old.completed_at.strftime("%Y-%m-%dT%H:%M:%SZ") in error["message"]
    assert "completed_at" in error["message"] and "14h" not in error["message"]


def test_the_cli_says_unknown_agent_for_a_typo_and_stamps_a_sent_turn_now(store, bucket, monkeypatch, capsys, sqs,
                                                                           tmp_path):
    from knowledge_cli.main import main

    monkeypatch.setenv("KNOWLEDGE_BUCKET", bucket)
    assert main(["history", "--agent", TYPO, "cep-sudeste-cd-campinas"]) == 1
    assert "unknown_agent" in capsys.readouterr().err
    queue = sqs.create_queue(QueueName=f"turns-{uuid.uuid4().hex[:8]}")["QueueUrl"]
    monkeypatch.setenv("TURN_QUEUE_URL", queue)
    assert main(["send-turn", str(ROOT / "events" / "turn.json")]) == 0
    [sent] = [json.loads(m["Body"]) for m in drain(sqs, queue)]
    when = datetime.fromisoformat(sent["completed_at"].replace("Z", "+00:00"))
    assert abs((datetime.now(timezone.utc) - when).total_seconds()) < 60
    assert main(["send-turn", "--keep-time", str(ROOT / "events" / "turn.json")]) == 0
    [kept] = [json.loads(m["Body"]) for m in drain(sqs, queue)]
    assert kept["completed_at"] == "2026-11-20T14:05:31Z"


# ------------------------------------------------------------------ a save you can follow

def status(retrieve, save_id, **where) -> dict:
    return call(retrieve, {"action": "save_status", "tenant": T, "agent": A, "save_id": save_id, **where})


def test_a_save_can_be_followed_from_queued_to_what_consolidation_did_and_the_outcome_is_an_event(
        retrieve, monkeypatch, env, s3, sessions_bucket, sqs, candidates_queue, bus):
    archive(s3, sessions_bucket)
    save_id = call(retrieve, SAVE)["save_id"]
    queued = status(retrieve, save_id)
    assert queued["status"] == "queued" and queued["settled_at"] is None
    assert (queued["name"], queued["session_id"], queued["turn_id"]) == ("despacho-mesmo-dia", SESSION, "turn_0001")
    [message] = consolidate_all(monkeypatch, env, sqs, candidates_queue)
    assert json.loads(message["Body"])["save_id"] == save_id
    settled = status(retrieve, save_id)
    assert settled["status"] == "created" and settled["settled_at"]
    [event] = [e for e in events(sqs, bus) if e["detail-type"] == "knowledge_save_settled"]
    assert event["detail"] == {"tenant": T, "agent": A, "name": "despacho-mesmo-dia", "type": "fact",
                               "outcome": "created", "session_id": SESSION, "save_id": save_id, "turn_id": "turn_0001"}
    # The same insight from the same turn is the same save: same id, its outcome kept.
    assert call(retrieve, SAVE)["save_id"] == save_id
    consolidate_all(monkeypatch, env, sqs, candidates_queue)
    assert status(retrieve, save_id)["status"] == "created"


def test_a_save_the_queue_refused_says_not_sent_and_saving_it_again_sends_it_under_its_id(
        retrieve, monkeypatch, env, s3, sessions_bucket, sqs, candidates_queue):
    archive(s3, sessions_bucket)
    name = candidates_queue.rsplit("/", 1)[1]
    sqs.delete_queue(QueueUrl=candidates_queue)  # the queue is gone: the send fails
    assert "error" in call(retrieve, SAVE)
    [save_id] = [r for r in _session_saves(s3, sessions_bucket)]
    assert status(retrieve, save_id)["status"] == "not_sent"  # never `queued` for ever
    sqs.create_queue(QueueName=name, Attributes={"FifoQueue": "true", "ContentBasedDeduplication": "false"})
    again = call(retrieve, SAVE)
    assert again["save_id"] == save_id and status(retrieve, save_id)["status"] == "queued"
    [message] = consolidate_all(monkeypatch, env, sqs, candidates_queue)
    assert json.loads(message["Body"])["save_id"] == save_id and status(retrieve, save_id)["status"] == "created"


def _session_saves(s3, sessions_bucket) -> list[str]:
    """The save ids recorded for the demo session (read from the bucket, as the cap counts them)."""
    from knowledge.store.saves import SaveRecords

    return SaveRecords(s3, sessions_bucket).of_session(T, A, SESSION)


def test_a_save_id_answers_only_in_its_tenant_and_agent_and_cannot_be_guessed(retrieve, store, s3, sessions_bucket):
    archive(s3, sessions_bucket)
    save_id = call(retrieve, SAVE)["save_id"]
    store.put_config("other-store", A, "knowledge:\n  extract: true\n", actor="operator:t")
    store.put_config(T, "other-agent", "knowledge:\n  extract: true\n", actor="operator:t")
    for where in ({"tenant": "other-store"}, {"agent": "other-agent"}):
        assert status(retrieve, save_id, **where)["error"]["code"] == "not_found"
    guessed = save_id[:-4] + ("AAAA" if not save_id.endswith("AAAA") else "BBBB")
    assert status(retrieve, guessed)["error"]["code"] == "not_found"
    assert status(retrieve, "turn_0001")["error"]["code"] == "invalid_request"


def test_a_session_past_its_cap_of_saves_is_refused_clearly(monkeypatch, env, s3, sessions_bucket, sqs,
                                                            candidates_queue):
    retrieve = load_handler("retrieve", monkeypatch, env, KNOWLEDGE_SAVES_PER_SESSION="2",
                            POWERTOOLS_SERVICE_NAME=f"knowledge-retrieve-{uuid.uuid4().hex[:6]}")
    archive(s3, sessions_bucket)
    for name in ("despacho-um", "despacho-dois"):
        assert call(retrieve, {**SAVE, "name": name})["status"] == "queued"
    assert call(retrieve, {**SAVE, "name": "despacho-dois"})["status"] == "queued"  # the same save again
    error = call(retrieve, {**SAVE, "name": "despacho-tres"})["error"]
    assert error["code"] == "save_limit" and "2" in error["message"] and "KNOWLEDGE_SAVES_PER_SESSION" in error["message"]
    assert len(drain(sqs, candidates_queue)) == 2
