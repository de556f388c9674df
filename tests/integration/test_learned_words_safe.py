"""Learned words are safe (issue 40, item 4), through the real handlers on moto: ExtractFunction's learning
path, PurgeFunction's forget_customer, ImportFunction and the `knowledge words audit` command. One
customer's repetition teaches nothing; an agent whose engine sends no customer id still learns, from
sessions half a day apart; another concept's own word and a person's name are never learned; a customer
forgotten is taken out of every word's count; data written before all this still loads."""

from __future__ import annotations

import json
import re
import uuid

import pytest
from helpers.aws import drain
from helpers.concepts import make_concept
from helpers.handlers import LambdaContext, load_event, load_handler
from helpers.turns import candidates_event

from knowledge.format.concept import parse
from knowledge.format.learned_words import LearnedWord
from knowledge.store.learning_ledger import customer_teacher

T, A = "default", "store-support"
TELA, BATERIA = "troca-de-tela", "bateria-original"
TELA_BODY = "Trocamos a tela quebrada do seu celular em até 2 horas, com garantia de 90 dias."
CONFIG = "knowledge:\n  types: [fact, entity, procedure, policy, objection]\n"
SAID = "Trocamos a tela em até 2 horas, com garantia."
FACTS_KEY = "k" * 48


def turn_event(session: str, said: str, *, customer: str | None = None, at: str = "2026-11-20T14:05:31Z",
               loaded: tuple[str, ...] = (TELA,)) -> dict:
    event = load_event("turn-complete.json")
    body = {"tenant": T, "agent": A, "session_id": session, "turn_id": "t1", "completed_at": at,
            "messages": [{"role": "user", "content": said}, {"role": "assistant", "content": SAID}],
            "shown": {"retrieved": [], "loaded": list(loaded)}}
    if customer:
        body["customer_id"] = customer
    event["Records"][0]["body"] = json.dumps(body, ensure_ascii=False)
    return event


@pytest.fixture
def agent(store):
    store.put_config(T, A, CONFIG, actor="operator:demo")
    store.create(T, A, make_concept(TELA, type="procedure", description="Troca de tela de celular na loja.",
                                    body=TELA_BODY, sources=("sess_0",)), actor="engine")
    store.create(T, A, make_concept(BATERIA, description="Baterias originais com garantia de um ano.",
                                    body="Troca de bateria na hora.", sources=("sess_0",)), actor="engine")
    return store


@pytest.fixture
def env(bucket, sessions_bucket, candidates_queue, bus, model):
    model.responder = lambda request: "[]"
    return dict(KNOWLEDGE_BUCKET=bucket, SESSIONS_BUCKET=sessions_bucket, CANDIDATES_QUEUE_URL=candidates_queue,
                EVENT_BUS_NAME=bus["name"], UTILITY_MODEL="openai:test-model", OPENAI_BASE_URL=model.base_url,
                FACTS_KEY=FACTS_KEY)


@pytest.fixture
def teach(monkeypatch, agent, env, sqs, candidates_queue):
    """One turn through ExtractFunction (and whatever it sends through ConsolidateFunction)."""
    extract = load_handler("extract", monkeypatch, env, POWERTOOLS_SERVICE_NAME=f"learn-{uuid.uuid4().hex[:6]}")
    consolidate = load_handler("consolidate", monkeypatch, env)

    def run(event: dict) -> None:
        assert extract.lambda_handler(event, LambdaContext()) == {"batchItemFailures": []}
        bodies = [m["Body"] for m in drain(sqs, candidates_queue)]
        if bodies:
            assert consolidate.lambda_handler(candidates_event(bodies), LambdaContext()) == {"batchItemFailures": []}

    return run


def learned(store, name: str = TELA) -> list[str]:
    return [entry.word for entry in store.get(T, A, name).concept.learned_words]


# ------------------------------------------------------------------ who teaches
def test_one_customer_repeating_a_word_in_many_chats_teaches_it_nothing_and_three_customers_do(teach, agent):
    for day in (10, 14, 18, 22):  # four chats of hers, days apart
        teach(turn_event(f"sess_ana_{day}", "minha telinha quebrou e quero uma pizza", customer="cus_ana",
                         at=f"2026-11-{day}T10:00:00Z"))
    assert learned(agent) == []
    teach(turn_event("sess_bia", "a telinha rachou", customer="cus_bia", at="2026-11-22T10:01:00Z"))
    assert learned(agent) == []
    teach(turn_event("sess_caio", "telinha trincada", customer="cus_caio", at="2026-11-22T10:02:00Z"))
    assert learned(agent) == ["telinha"]  # three customers, minutes apart; "pizza" had one
    entry = agent.get(T, A, TELA).concept.learned_words[0]
    assert (entry.origin, entry.sessions) == ("loaded", 3)


def test_an_engine_that_sends_no_customer_id_still_teaches_from_sessions_half_a_day_apart(teach, agent):
    for minute in (0, 1, 2, 3):  # one visitor's four chats in a few minutes
        teach(turn_event(f"sess_{minute}", "a telinha rachou", at=f"2026-11-20T10:0{minute}:00Z"))
    assert learned(agent) == []
    teach(turn_event("sess_next_day", "minha telinha quebrou", at="2026-11-21T09:00:00Z"))
    assert learned(agent) == ["telinha"]


def test_another_concepts_own_word_is_never_learned_for_this_one(teach, agent):
    # "baterias" is bateria-original's own word (one concept says it): it tells that concept apart.
    for n, customer in enumerate(("cus_1", "cus_2", "cus_3", "cus_4")):
        teach(turn_event(f"sess_{n}", "a telinha rachou e a bateria estufou", customer=customer))
    assert "telinha" in learned(agent) and "bateria" not in learned(agent)
    assert learned(agent, BATERIA) == []


def test_a_persons_name_is_never_learned_whoever_writes_it(teach, agent):
    said = ["aqui é da família bortolotto, a telinha rachou", "bortolotto aqui de novo, telinha trincada",
            "a telinha quebrou\nbortolotto", "oi, o pedido da Bortolotto: a telinha rachou"]
    for n, text in enumerate(said):
        teach(turn_event(f"sess_{n}", text, customer=f"cus_{n}"))
    assert "telinha" in learned(agent) and "bortolotto" not in learned(agent)


def test_a_word_an_operator_removed_never_comes_back_by_the_traffic(teach, agent):
    current = agent.get(T, A, TELA)
    agent.replace(T, A, current.concept.replace(removed_words=("telinha",)), if_match=current.etag,
                  actor="operator:ana", reason="edit")
    for n in range(5):
        teach(turn_event(f"sess_{n}", "a telinha rachou toda", customer=f"cus_{n}"))
    assert learned(agent) == ["rachou"]
    assert agent.get(T, A, TELA).concept.removed_words == ("telinha",)


# ------------------------------------------------------------------ forget_customer
def forget(monkeypatch, env, customer: str, **extra) -> dict:
    purge = load_handler("purge", monkeypatch, env)
    return purge.lambda_handler({"action": "forget_customer", "tenant": T, "customer_id": customer, **extra},
                                LambdaContext())


def kept_keys(s3, bucket: str) -> set[str]:
    answer = s3.list_object_versions(Bucket=bucket, Prefix=f"agents/{T}/{A}/learned-words/")
    return {v["Key"] for v in answer.get("Versions", []) + answer.get("DeleteMarkers", [])}


def test_forgetting_a_customer_takes_a_word_below_its_threshold_out_with_every_version_holding_it(
        teach, agent, monkeypatch, env, s3, bucket):
    for n in range(3):
        teach(turn_event(f"sess_{n}", "e a telinha?", customer=f"cus_{n}"))
    assert learned(agent) == ["telinha"]
    assert {k.rsplit("/", 1)[-1] for k in kept_keys(s3, bucket)} == {customer_teacher(T, f"cus_{n}") for n in range(3)}
    current = agent.get(T, A, TELA)  # an operator's edit after it was learned: it holds the word too
    agent.replace(T, A, current.concept.replace(body=TELA_BODY + " Aceitamos Pix."), if_match=current.etag,
                  actor="operator:ana", reason="edit")
    holding = [v.version_id for v in agent.versions(T, A, TELA)
               if not v.deleted and agent.read_version(T, A, TELA, v.version_id).concept.learned_words]

    dry = forget(monkeypatch, env, "cus_1", dry_run=True)
    assert dry["concept_versions"] == {f"{A}/{TELA}": len(holding)} and learned(agent) == ["telinha"]
    answer = forget(monkeypatch, env, "cus_1")

    assert answer["complete"] and answer["concept_versions"] == {f"{A}/{TELA}": len(holding)}
    now = agent.get(T, A, TELA)
    assert now.concept.learned_words == () and now.concept.removed_words == ()  # free to be taught again
    assert (now.actor, now.reason) == ("engine", "purged") and "Aceitamos Pix" in now.concept.body
    left = agent.versions(T, A, TELA)
    assert not {v.version_id for v in left} & set(holding)
    assert all(agent.read_version(T, A, TELA, v.version_id).concept.learned_words == () for v in left if not v.deleted)
    assert kept_keys(s3, bucket) == set()  # the ledger keeps teachers only while the word is on a concept


def test_forgetting_one_of_many_teachers_keeps_the_word_and_takes_only_her_out(teach, agent, monkeypatch, env, s3,
                                                                              bucket, sessions_bucket):
    for n in range(4):
        teach(turn_event(f"sess_{n}", "e a telinha?", customer=f"cus_{n}"))
    teach(turn_event("sess_x", "quero uma pizza", customer="cus_1"))  # a word she taught that is still pending
    answer = forget(monkeypatch, env, "cus_1")
    assert answer["complete"] and "concept_versions" not in answer
    assert learned(agent) == ["telinha"]
    assert customer_teacher(T, "cus_1") not in {k.rsplit("/", 1)[-1] for k in kept_keys(s3, bucket)}
    assert len(kept_keys(s3, bucket)) == 3  # three still teach it: the fourth was kept once it was learned
    pending = s3.list_objects_v2(Bucket=sessions_bucket, Prefix=f"{T}/{A}/learning/words/").get("Contents", [])
    assert not any(item["Key"].endswith(customer_teacher(T, "cus_1")) for item in pending)
    assert answer["removed"]["learning_ledger"] >= 1 and answer["removed"]["learned_word_teachers"] == 1


# ------------------------------------------------------------------ what earlier releases wrote
EARLIER_CONCEPT = """---
name: troca-de-tela
type: procedure
description: Troca de tela de celular na loja.
provenance: observed
confidence: 0.6
sources: [sess_0]
occurrences: 1
created_at: 2026-11-01T12:00:00Z
updated_at: 2026-11-01T12:00:00Z
learned_words:
  - {word: "telinha", origin: loaded, sessions: 4, at: 2026-11-20}
  - {word: "visor", origin: sighting, sessions: 3, at: 2026-11-21}
removed_words: ["smart"]
---

Trocamos a tela quebrada do seu celular em até 2 horas.
"""


def test_a_config_and_an_export_written_before_this_change_load_and_work(monkeypatch, store, env, teach, tmp_path,
                                                                         capsys):
    from knowledge_cli.main import main

    store.put_config(T, A, CONFIG + "  learn_from: [loaded, sighting]\n  learn_min_sessions: 4\n",
                     actor="operator:demo", if_match=store.get_config(T, A).etag)
    folder = tmp_path / "export"
    folder.mkdir()
    (folder / f"{TELA}.md").write_text(EARLIER_CONCEPT, encoding="utf-8")
    for name, value in (("KNOWLEDGE_BUCKET", env["KNOWLEDGE_BUCKET"]), ("SESSIONS_BUCKET", env["SESSIONS_BUCKET"])):
        monkeypatch.setenv(name, value)
    assert main(["import", "--agent", A, "--replace", "--provenance", "file", "--operator", "ana", str(folder)]) == 0
    concept = store.get(T, A, TELA).concept
    assert [(e.word, e.origin, e.sessions) for e in concept.learned_words] == [("telinha", "loaded", 4),
                                                                               ("visor", "sighting", 3)]
    assert concept.removed_words == ("smart",)
    for n in range(3):
        teach(turn_event(f"sess_{n}", "a tela trincada", customer=f"cus_{n}"))
    assert [e.word for e in store.get(T, A, TELA).concept.learned_words] == ["telinha", "visor"]  # 3 < 4
    teach(turn_event("sess_3", "a tela trincada", customer="cus_3"))
    assert "trincada" in [e.word for e in store.get(T, A, TELA).concept.learned_words]
    assert parse(store.get(T, A, TELA).data).removed_words == ("smart",)


# ------------------------------------------------------------------ knowledge words audit
def legacy_ledger(s3, sessions_bucket, concept: str, word: str, sessions: list[str]) -> None:
    """Pending entries as an earlier release wrote them: one per session, no customer, no time, under the
    hash of the word's index term."""
    import hashlib

    from knowledge.recall.analysis import analyze

    [(term, _)] = analyze(word, shorthand=True).words
    digest = hashlib.sha256(term.encode()).hexdigest()[:16]
    for session in sessions:
        s3.put_object(Bucket=sessions_bucket, Key=f"{T}/{A}/learning/words/{concept}/{digest}/{session}",
                      Body=json.dumps({"word": word, "signal": "loaded"}).encode())


def test_the_audit_lists_then_takes_out_what_the_rules_would_not_have_learned(agent, s3, sessions_bucket,
                                                                              monkeypatch, env, capsys):
    from knowledge_cli.main import main

    current = agent.get(T, A, TELA)
    seeded = tuple(LearnedWord(w, "loaded", 3, current.concept.created_at.date())
                   for w in ("marcela", "bateria", "pizza", "telinha", "visor"))
    agent.replace(T, A, current.concept.replace(learned_words=(*seeded, LearnedWord("display", "model", 0,
                                                                                    seeded[0].at))),
                  if_match=current.etag, actor="learning", reason="learned")
    # "pizza": one customer's three sessions (the customer index says whose); "telinha": three customers'.
    legacy_ledger(s3, sessions_bucket, TELA, "pizza", ["sess_a1", "sess_a2", "sess_a3"])
    legacy_ledger(s3, sessions_bucket, TELA, "telinha", ["sess_a1", "sess_b1", "sess_c1"])
    for customer, session in (("cus_a", "sess_a1"), ("cus_a", "sess_a2"), ("cus_a", "sess_a3"),
                              ("cus_b", "sess_b1"), ("cus_c", "sess_c1")):
        s3.put_object(Bucket=sessions_bucket, Key=f"{T}/{A}/facts/customers/{customer}/{session}", Body=b"")
    for name, value in (("KNOWLEDGE_BUCKET", env["KNOWLEDGE_BUCKET"]), ("SESSIONS_BUCKET", env["SESSIONS_BUCKET"])):
        monkeypatch.setenv(name, value)
    before = agent.get(T, A, TELA).version_id

    assert main(["words", "audit", "--agent", A, "--dry-run"]) == 0
    out = capsys.readouterr().out
    lines = {re.search(r"'([^']+)'", line).group(1): line for line in out.splitlines()
             if line.startswith(("would", "kept"))}
    assert "a name" in lines["marcela"] and "another concept's own word" in lines["bateria"]
    assert "too few" in lines["pizza"] and "not checked" in lines["visor"] and lines["visor"].startswith("kept")
    assert "telinha" not in lines and "display" not in lines  # enough customers; the model's word is not audited
    assert "3 of 5 words" in out and "nothing written" in out
    assert agent.get(T, A, TELA).version_id == before

    assert main(["words", "audit", "--agent", A]) == 0
    assert "removed" in capsys.readouterr().out
    now = agent.get(T, A, TELA)
    assert [e.word for e in now.concept.learned_words] == ["telinha", "visor", "display"]
    assert now.concept.removed_words == () and (now.actor, now.reason) == ("engine", "repaired")
    assert [v.version_id for v in agent.versions(T, A, TELA)][1] == before  # one version for the concept
    assert main(["words", "audit", "--agent", A, "--dry-run"]) == 0
    assert "0 of 2 words" in capsys.readouterr().out


def test_the_audit_deletes_the_teachers_kept_for_a_word_an_operator_removed(teach, agent, s3, bucket, monkeypatch,
                                                                           env, capsys):
    from knowledge_cli.main import main

    for n in range(3):
        teach(turn_event(f"sess_{n}", "e a telinha?", customer=f"cus_{n}"))
    current = agent.get(T, A, TELA)
    agent.replace(T, A, current.concept.replace(learned_words=(), removed_words=("telinha",)),
                  if_match=current.etag, actor="operator:ana", reason="edit")
    for name, value in (("KNOWLEDGE_BUCKET", env["KNOWLEDGE_BUCKET"]), ("SESSIONS_BUCKET", env["SESSIONS_BUCKET"])):
        monkeypatch.setenv(name, value)
    assert len(kept_keys(s3, bucket)) == 3
    assert main(["words", "audit", "--agent", A, "--dry-run"]) == 0
    assert "would delete the kept teachers of 1 word(s)" in capsys.readouterr().out and len(kept_keys(s3, bucket)) == 3
    assert main(["words", "audit", "--agent", A]) == 0
    assert kept_keys(s3, bucket) == set()
    assert agent.get(T, A, TELA).concept.removed_words == ("telinha",)
