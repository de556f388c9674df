"""A person's bare name (no honorific) never reaches what is learned: not a concept's name or body through
ExtractFunction, not a concept created in the studio, not a Facts proposal's name through DistillFunction;
while the places, brands and products of the same messages are kept."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

from helpers.aws import drain
from helpers.handlers import LambdaContext, load_event, load_handler
from helpers.studio import BASE, demo_studio

from facts.proposals import ProposalStore
from facts.sessions import record_turn
from knowledge.format.sighting import parse_sighting
from knowledge.format.turn import Turn
from knowledge.store.archive import TurnArchive

T, A = "default", "store-support"
USER = "oi, aqui é a joana prado, sou cliente vip. vcs entregam em Natal? pago com Sodexo"
ASSISTANT = ("Olá Joana! Entregamos em Natal e Salvador em até 5 dias úteis e aceitamos Sodexo e Alelo "
             "no app. Para clientes VIP o frete é grátis.")


def turn_event() -> dict:
    record = load_event("turn-complete.json")["Records"][0]
    body = {"tenant": T, "agent": A, "session_id": "sess_joana_01", "turn_id": "turn_0001",
            "completed_at": "2026-11-20T14:05:31Z", "customer_id": "cus_20931",
            "messages": [{"role": "user", "content": USER}, {"role": "assistant", "content": ASSISTANT}]}
    return {"Records": [{**record, "messageId": "m-1", "body": json.dumps(body, ensure_ascii=False)}]}


def test_a_customers_bare_name_never_reaches_a_concepts_name_or_body_and_places_and_brands_stay(
        monkeypatch, store, bucket, sessions_bucket, candidates_queue, model, sqs):
    store.put_config(T, A, "knowledge:\n  extract: true\n", actor="operator:demo")
    evidence = "Entregamos em Natal e Salvador em até 5 dias úteis"
    model.responder = lambda request: json.dumps([
        {"name": "cliente-joana-prado-vip", "type": "fact", "evidence": evidence,
         "description": "Joana Prado é cliente VIP.", "body": "Joana Prado é cliente VIP e tem frete grátis."},
        {"name": "frete-vip-gratis", "type": "fact", "evidence": "Para clientes VIP o frete é grátis",
         "description": "Clientes VIP como joana prado têm frete grátis.",
         "body": "Como disse à JOANA: para clientes VIP o frete é grátis."},
        {"name": "entrega-natal-salvador", "type": "fact", "evidence": evidence,
         "description": "Natal e Salvador recebem em até 5 dias úteis.",
         "body": "Entregamos em Natal e Salvador em até 5 dias úteis; aceitamos Sodexo e Alelo no app."}],
        ensure_ascii=False)
    extract = load_handler("extract", monkeypatch, dict(
        KNOWLEDGE_BUCKET=bucket, SESSIONS_BUCKET=sessions_bucket, CANDIDATES_QUEUE_URL=candidates_queue,
        UTILITY_MODEL="openai:utility", OPENAI_BASE_URL=model.base_url))
    assert extract.lambda_handler(turn_event(), LambdaContext()) == {"batchItemFailures": []}
    concepts = {s.name: s.parsed() for s in (parse_sighting(m["Body"]) for m in drain(sqs, candidates_queue))}
    assert set(concepts) == {"frete-vip-gratis", "entrega-natal-salvador"}  # the name carrying her is refused
    vip = concepts["frete-vip-gratis"]
    assert vip.description == "Clientes VIP como [name] têm frete grátis."
    assert vip.body == "Como disse à [name]: para clientes VIP o frete é grátis."
    places = concepts["entrega-natal-salvador"]
    assert places.body == "Entregamos em Natal e Salvador em até 5 dias úteis; aceitamos Sodexo e Alelo no app."
    assert all("joana" not in (c.description + c.body).lower() for c in concepts.values())


def test_the_studio_refuses_to_create_a_concept_named_after_a_person(monkeypatch, store, bucket, sessions_bucket):
    call = demo_studio(monkeypatch, store, bucket, sessions_bucket)
    document = ("---\nname: cliente-joana-prado-vip\ndescription: Frete grátis para ela.\ntype: fact\n---\n\n"
                "Frete grátis.\n")
    status, body, _ = call("POST", f"{BASE}/concepts", body={"markdown": document})
    assert (status, body["error"]["code"]) == (422, "invalid_concept")
    assert body["errors"] == [{"field": "name", "line": 2, "message": "holds a person's name: name the concept "
                                                                      "for what it says, not for a customer"}]
    assert store.find(T, A, "cliente-joana-prado-vip") is None
    ok = document.replace("cliente-joana-prado-vip", "frete-gratis-natal")
    assert call("POST", f"{BASE}/concepts", body={"markdown": ok})[0] in (200, 201)


KEY = "k" * 48


def test_a_facts_proposal_named_after_the_customer_is_refused_and_counted(
        monkeypatch, s3, bucket, sessions_bucket, bus, model, script):
    s3.put_object(Bucket=bucket, Key=f"agents/{T}/{A}/knowledge.yaml",
                  Body=b"knowledge:\n  extract: false\ndistill:\n  idle_hours: 6\n  min_messages: 2\n")
    at = datetime.now(timezone.utc) - timedelta(hours=8)
    turn = Turn(tenant=T, agent=A, session_id="sess_joana_01", turn_id="turn_0001", completed_at=at,
                customer_id="cus_20931", messages=[{"role": "user", "content": USER},
                                                    {"role": "assistant", "content": ASSISTANT}])
    TurnArchive(s3, sessions_bucket).put(turn)
    record_turn(s3, sessions_bucket, turn)
    script.replies = [json.dumps([{"name": "joana_prado_email", "value": "joana@example.com", "evidence": [0]},
                                  {"name": "JOANA_PRADO_telefone", "value": "84 98765-4321", "evidence": [0]},
                                  {"name": "cidade_entrega", "value": "Natal", "evidence": [0]}])]
    distill = load_handler("distill", monkeypatch, dict(
        KNOWLEDGE_BUCKET=bucket, SESSIONS_BUCKET=sessions_bucket, EVENT_BUS_NAME=bus["name"],
        UTILITY_MODEL="openai:distiller", OPENAI_BASE_URL=model.base_url, FACTS_KEY=KEY))
    report = distill.lambda_handler(load_event("distill.json"), LambdaContext())
    assert report["proposed"] == 1 and report["rejected"] == {"pii_in_name": 2}
    names = [p.proposal.name for p in ProposalStore(s3, sessions_bucket).list(T, A, "cus_20931")]
    assert names == ["cidade_entrega"]
