"""The model proposes the words customers use for a concept an operator saved (`origin: model`), through
the real studio and PolicyReviewFunction on moto, a real local HTTP server answering as the model:
one job per save, gated word by word, written as a new version by `learning`, never over an
operator's newer text, within the tenant's daily model calls, and only for an agent that asks."""

from __future__ import annotations

import json

import pytest
from helpers.aws import drain, new_queue, sqs_event
from helpers.handlers import LambdaContext, load_handler
from helpers.studio import BASE, demo_studio

T, A = "default", "store-support"
CONCEPT = ("---\nname: troca-de-tela\ndescription: Troca de tela de celular na loja em até 2 horas.\n"
           "type: procedure\n---\n\nTrocamos a tela quebrada do seu celular em até 2 horas, com garantia de 90 dias.\n")
GOOD = ["telinha", "visor trincado", "display"]
ANSWER = json.dumps([*GOOD, "liga 11 98765-4321", "ana@gmail.com", "tela", "a tela quebrada do celular demorou",
                     "Telinha", "vidrinho"])


@pytest.fixture
def world(monkeypatch, store, bucket, sessions_bucket, sqs, bus, model):
    queue = new_queue(sqs)
    api = demo_studio(monkeypatch, store, bucket, sessions_bucket, POLICY_REVIEW_QUEUE_URL=queue)
    config = store.get_config(T, A)
    asks = config.text.replace("knowledge:\n", "knowledge:\n  learn_from: [loaded, sighting, model]\n", 1)
    assert asks != config.text
    store.put_config(T, A, asks, actor="operator:demo", if_match=config.etag)
    asked: list[dict] = []

    def respond(request):
        asked.append(request)
        return ANSWER
    model.responder = respond
    env = dict(KNOWLEDGE_BUCKET=bucket, SESSIONS_BUCKET=sessions_bucket, EVENT_BUS_NAME=bus["name"],
               UTILITY_MODEL="openai:words", OPENAI_BASE_URL=model.base_url)
    return {"api": api, "queue": queue, "env": env, "asked": asked}


def words_jobs(sqs, queue) -> list[str]:
    return [m["Body"] for m in drain(sqs, queue) if json.loads(m["Body"]).get("job") == "words"]


def save(world, sqs, markdown: str, etag: str | None = None) -> tuple[dict, list[str]]:
    if etag is None:
        status, body, _ = world["api"]("POST", f"{BASE}/concepts", body={"markdown": markdown})
    else:
        status, body, _ = world["api"]("PUT", f"{BASE}/concepts/troca-de-tela", body={"markdown": markdown},
                                       headers={"if-match": etag})
    assert status in (200, 201), body
    return body, words_jobs(sqs, world["queue"])


def model_words(store) -> list[tuple[str, str, int]]:
    return [(e.word, e.origin, e.sessions) for e in store.get(T, A, "troca-de-tela").concept.learned_words]


def test_a_save_asks_the_model_once_and_its_words_are_gated_one_by_one(monkeypatch, world, store, sqs, capsys):
    _, jobs = save(world, sqs, CONCEPT)
    assert [json.loads(j) for j in jobs] == [{"v": 1, "tenant": T, "agent": A, "name": "troca-de-tela", "job": "words"}]
    function = load_handler("policy_review", monkeypatch, world["env"])
    assert function.lambda_handler(sqs_event(*jobs), LambdaContext()) == {"batchItemFailures": []}
    assert len(world["asked"]) == 1
    prompt = world["asked"][0]["messages"][-1]["content"]
    assert "troca-de-tela" in prompt and "Trocamos a tela quebrada" in prompt
    # Kept: the three customer words and "vidrinho". Refused: a phone, an e-mail, a word the concept
    # has ("tela"), a whole sentence, and "Telinha" again (lowercased, it is "telinha").
    assert model_words(store) == [(w, "model", 0) for w in [*GOOD, "vidrinho"]]
    versions = store.versions(T, A, "troca-de-tela")
    assert (versions[0].actor, versions[0].reason) == ("learning", "learned")
    out = capsys.readouterr().out
    assert '"WordsProposed":[4.0]' in out.replace(" ", "")
    for word in (*GOOD, "vidrinho", "98765", "gmail"):
        assert word not in out  # counts only, never a word
    # The function's own write asks nothing more, and a re-save of the same text asks nothing either.
    assert words_jobs(sqs, world["queue"]) == []
    current = store.get(T, A, "troca-de-tela")
    status, _, _ = world["api"]("PUT", f"{BASE}/concepts/troca-de-tela",
                                body={"markdown": current.data.decode()}, headers={"if-match": current.etag})
    assert status == 200
    assert function.lambda_handler(sqs_event(*words_jobs(sqs, world["queue"])), LambdaContext()) == {
        "batchItemFailures": []}
    assert len(world["asked"]) == 1


def test_removing_a_model_word_is_an_operators_edit_that_asks_nothing_and_the_word_never_comes_back(
        monkeypatch, world, store, sqs):
    _, jobs = save(world, sqs, CONCEPT)
    function = load_handler("policy_review", monkeypatch, world["env"])
    function.lambda_handler(sqs_event(*jobs), LambdaContext())
    current = store.get(T, A, "troca-de-tela")
    edited = "\n".join(line for line in current.data.decode().split("\n") if '"display"' not in line)
    body, jobs = save(world, sqs, edited, etag=current.etag)
    assert 'removed_words: ["display"]' in body["markdown"]
    assert function.lambda_handler(sqs_event(*jobs), LambdaContext()) == {"batchItemFailures": []}
    assert len(world["asked"]) == 1  # only the learned words changed: the text is the same
    # The text changes: the model is asked again, and the removed word is refused.
    current = store.get(T, A, "troca-de-tela")
    body, jobs = save(world, sqs, current.data.decode().replace("2 horas, com", "1 hora, com"), etag=current.etag)
    function.lambda_handler(sqs_event(*jobs), LambdaContext())
    assert len(world["asked"]) == 2
    concept = store.get(T, A, "troca-de-tela").concept
    assert "display" not in [e.word for e in concept.learned_words] and concept.removed_words == ("display",)


def test_an_operators_own_word_stays_theirs_and_the_models_words_go_beside_it(monkeypatch, world, store, sqs):
    mine = CONCEPT.replace("type: procedure\n", "type: procedure\nlearned_words:\n"
                           "  - {word: \"telinha\", origin: operator, sessions: 0, at: 2026-12-01}\n")
    _, jobs = save(world, sqs, mine)
    function = load_handler("policy_review", monkeypatch, world["env"])
    assert function.lambda_handler(sqs_event(*jobs), LambdaContext()) == {"batchItemFailures": []}
    # The model proposed "telinha" too: refused as learned already, the operator's word unchanged.
    assert model_words(store) == [("telinha", "operator", 0), *[(w, "model", 0) for w in [*GOOD[1:], "vidrinho"]]]


def test_an_operators_newer_text_is_never_overwritten(monkeypatch, world, store, sqs, model):
    _, jobs = save(world, sqs, CONCEPT)
    current = store.get(T, A, "troca-de-tela")

    def operator_saves_meanwhile(request):
        store.replace(T, A, current.concept.replace(body=current.concept.body.replace("2 horas", "3 horas")),
                      if_match=current.etag, actor="operator:ana", reason="edit")
        return ANSWER
    model.responder = operator_saves_meanwhile
    function = load_handler("policy_review", monkeypatch, world["env"])
    assert function.lambda_handler(sqs_event(*jobs), LambdaContext()) == {"batchItemFailures": []}
    stored = store.get(T, A, "troca-de-tela")
    assert stored.actor == "operator:ana" and "3 horas" in stored.concept.body and not stored.concept.learned_words


def test_an_unusable_answer_is_asked_again_by_the_queue_then_dropped(monkeypatch, world, store, sqs, model, capsys):
    _, jobs = save(world, sqs, CONCEPT)
    model.responder = lambda request: "Claro! Aqui estão algumas palavras: telinha, visor"
    function = load_handler("policy_review", monkeypatch, world["env"])
    failed = function.lambda_handler(sqs_event(*jobs), LambdaContext())
    assert failed == {"batchItemFailures": [{"itemIdentifier": "m0"}]}  # the queue asks again
    assert function.lambda_handler(sqs_event(*jobs, receive=3), LambdaContext()) == {"batchItemFailures": []}
    assert model_words(store) == []
    assert '"WordProposalDropped"' in capsys.readouterr().out


def test_no_call_beyond_the_tenants_daily_model_calls_and_the_concept_waits(monkeypatch, world, store, s3, sqs,
                                                                               bucket):
    function = load_handler("policy_review", monkeypatch, world["env"], KNOWLEDGE_TENANT_DAILY_MODEL_CALLS="1")
    _, jobs = save(world, sqs, CONCEPT)
    function.lambda_handler(sqs_event(*jobs), LambdaContext())
    other = CONCEPT.replace("troca-de-tela", "troca-de-tampa").replace("tela", "tampa")
    _, jobs = save(world, sqs, other)
    function.lambda_handler(sqs_event(*jobs), LambdaContext())
    assert len(world["asked"]) == 1
    assert store.get(T, A, "troca-de-tampa").concept.learned_words == ()
    from knowledge.store.pending_words import PendingWords

    assert PendingWords(s3, bucket).names(T, A) == ["troca-de-tampa"]  # deferred, not dropped


def test_an_agent_whose_config_lists_learn_from_without_model_gets_none(monkeypatch, world, store, sqs):
    config = store.get_config(T, A)
    store.put_config(T, A, config.text.replace("  learn_from: [loaded, sighting, model]\n",
                                               "  learn_from: [loaded, sighting]\n"),
                     actor="operator:demo", if_match=config.etag)  # a config of an earlier release keeps its list
    _, jobs = save(world, sqs, CONCEPT)
    function = load_handler("policy_review", monkeypatch, world["env"])
    assert function.lambda_handler(sqs_event(*jobs), LambdaContext()) == {"batchItemFailures": []}
    assert world["asked"] == [] and model_words(store) == []


def test_another_tenants_job_never_reads_or_writes_this_tenants_concept(monkeypatch, world, store, sqs):
    save(world, sqs, CONCEPT)
    function = load_handler("policy_review", monkeypatch, world["env"])
    job = json.dumps({"v": 1, "tenant": "outra-loja", "agent": A, "name": "troca-de-tela", "job": "words"})
    assert function.lambda_handler(sqs_event(job), LambdaContext()) == {"batchItemFailures": []}
    assert world["asked"] == [] and model_words(store) == []
