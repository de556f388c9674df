"""Identifiers the redaction must catch (a CVV, a random Pix key, a voter id) and the store's own published
contacts it must keep, through ExtractFunction and ConsolidateFunction with a local model server."""

from __future__ import annotations

import json

import pytest
from helpers.aws import drain
from helpers.concepts import make_concept
from helpers.handlers import LambdaContext, load_event, load_handler

from knowledge.format.sighting import parse_sighting

T, A = "default", "store-support"
PIX_KEY = "3f1c2b7e-8a9d-4e6f-b1c2-7d8e9f0a1b2c"
VOTER_ID = "0043 5687 0906"  # check digits valid (São Paulo)


def turn_event(user: str, assistant: str, session: str = "sess_pii_01") -> dict:
    record = load_event("turn-complete.json")["Records"][0]
    body = {"tenant": T, "agent": A, "session_id": session, "turn_id": "turn_0001",
            "completed_at": "2026-11-20T14:05:31Z", "messages": [{"role": "user", "content": user},
                                                                {"role": "assistant", "content": assistant}]}
    return {"Records": [{**record, "messageId": f"{session}-1", "body": json.dumps(body, ensure_ascii=False)}]}


def answering(candidates: list[dict]):
    """The model: `candidates` to extraction, `same` to a judge (the test counts the judge's calls)."""
    def respond(request: dict) -> str:
        prompt = "\n".join(str(m.get("content", "")) for m in request.get("messages", []))
        if "verdict" in prompt:
            return json.dumps({"verdict": "same"})
        return json.dumps(candidates, ensure_ascii=False)
    return respond


@pytest.fixture
def handlers(monkeypatch, bucket, sessions_bucket, candidates_queue, bus, model):
    env = dict(KNOWLEDGE_BUCKET=bucket, SESSIONS_BUCKET=sessions_bucket, CANDIDATES_QUEUE_URL=candidates_queue,
               EVENT_BUS_NAME=bus["name"], UTILITY_MODEL="openai:utility", OPENAI_BASE_URL=model.base_url)
    return {name: load_handler(name, monkeypatch, env) for name in ("extract", "consolidate")}


def sqs_event(messages: list[dict]) -> dict:
    return {"Records": [{
        "messageId": m["MessageId"], "receiptHandle": m["ReceiptHandle"], "body": m["Body"],
        "attributes": {**m["Attributes"], "ApproximateReceiveCount": "1"}, "messageAttributes": {},
        "md5OfBody": "0", "eventSource": "aws:sqs", "awsRegion": "us-east-1",
        "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:candidates.fifo"} for m in messages]}


def test_a_cvv_a_random_pix_key_and_a_voter_id_never_reach_a_sighting(handlers, store, model, sqs,
                                                                      candidates_queue):
    store.put_config(T, A, "knowledge:\n  extract: true\n", actor="operator:demo")
    said = (f"Anotei: a cliente pagou com cvv 123, a chave pix {PIX_KEY} e o titulo de eleitor {VOTER_ID} "
            "ficam no cadastro; estornos de Pix saem em até 2 dias úteis.")
    model.responder = answering([{
        "name": "estorno-pix-prazo", "type": "fact", "evidence": "estornos de Pix saem em até 2 dias úteis",
        "description": f"Estorno de Pix em até 2 dias úteis (chave {PIX_KEY}).",
        "body": said}])
    answer = handlers["extract"].lambda_handler(turn_event("quero o estorno do meu pix", said), LambdaContext())
    assert answer == {"batchItemFailures": []}
    [message] = drain(sqs, candidates_queue)
    concept = parse_sighting(message["Body"]).parsed()
    for secret in ("123", PIX_KEY, VOTER_ID, "8901", "0906"):
        assert secret not in concept.description + concept.body
    assert concept.body.startswith("Anotei: a cliente pagou com cvv [cvv], a chave pix [pix] e o titulo de "
                                   "eleitor [voter_id] ficam no cadastro")
    assert "[phone]" not in concept.body  # the voter id is not half read as a phone number
    assert concept.description == "Estorno de Pix em até 2 dias úteis (chave [pix])."


CONTACT = ("O SAC atende pelo e-mail sac@casanatal.com.br, pelo telefone (84) 3201-4455 e na "
           "Avenida Prudente de Morais, 3200 - Tirol, Natal.")


@pytest.mark.parametrize("declared, judged", [(True, 0), (False, 1)])
def test_the_stores_published_contacts_are_kept_and_a_repeat_of_its_staff_written_concept_needs_no_judge(
        handlers, store, model, sqs, candidates_queue, declared, judged):
    contacts = ("  published_contacts: [sac@casanatal.com.br, \"(84) 3201-4455\", "
                "\"Avenida Prudente de Morais, 3200\"]\n") if declared else ""
    store.put_config(T, A, "knowledge:\n  extract: true\n" + contacts, actor="operator:demo")
    store.create(T, A, make_concept("sac-contato", type="policy", provenance="policy", confidence=0.95,
                                    description="Contatos do SAC da loja.", body=CONTACT), actor="operator:ana")
    model.responder = answering([{"name": "sac-contato", "type": "policy", "evidence": CONTACT[:60],
                                  "description": "Contatos do SAC da loja.", "body": CONTACT}])
    handlers["extract"].lambda_handler(turn_event("qual o contato do sac?", CONTACT), LambdaContext())
    messages = drain(sqs, candidates_queue)
    body = parse_sighting(messages[0]["Body"]).parsed().body
    if declared:
        assert body == CONTACT  # the store's e-mail, phone and address are its own, not a customer's
    else:
        assert "[email]" in body and "[phone]" in body
    model.requests.clear()
    assert handlers["consolidate"].lambda_handler(sqs_event(messages), LambdaContext()) == {"batchItemFailures": []}
    assert len(model.requests) == judged
    stored = store.get(T, A, "sac-contato").concept
    assert stored.body.startswith(CONTACT)


def test_published_contacts_must_be_one_line_texts(store):
    from shared.errors import InvalidConfig

    with pytest.raises(InvalidConfig):
        store.put_config(T, A, "knowledge:\n  published_contacts: [[a, b]]\n", actor="operator:demo")
    with pytest.raises(InvalidConfig):
        store.put_config(T, A, "knowledge:\n  published_contacts: \"sac@loja.com.br\"\n", actor="operator:demo")
