"""Learning a store's words from its own traffic, through the real ExtractFunction, ConsolidateFunction
and RetrieveFunction on moto: a word three sessions teach becomes a learned word of the concept, in its
document, written by `learning`; recall then reads it as a reading of that concept."""

from __future__ import annotations

import json
import uuid
from collections import Counter
from datetime import datetime, timezone

import pytest
from helpers.aws import drain
from helpers.concepts import make_concept
from helpers.handlers import LambdaContext, load_event, load_handler
from helpers.turns import candidates_event

from knowledge.format.concept import parse
from knowledge.format.learned_words import LearnedWord

T, A = "default", "store-support"
TELA = "troca-de-tela"
TELA_DESCRIPTION = "Troca de tela de celular na loja em até 2 horas."
TELA_BODY = "Trocamos a tela quebrada do seu celular em até 2 horas, com garantia de 90 dias."
BATERIA = "bateria-original"
BATERIA_DESCRIPTION = "Baterias originais com garantia de um ano."
SEEDED = datetime(2026, 11, 1, 12, 0, tzinfo=timezone.utc)
CONFIG = "knowledge:\n  types: [fact, entity, procedure, policy, objection]\n"
SAYS = "a telinha do meu smart rachou toda"
SAID = "Trocamos a tela em até 2 horas, com garantia."


def turn_event(session: str, customer: str, *, turn_id: str = "t1", loaded: tuple[str, ...] = (TELA,),
               shown: bool = True, day: int = 20) -> dict:
    """A turn of `session` on day `day` of November 2026: sessions without a customer id teach a word
    only when they are at least half a day apart (knowledge.learning.word_rule)."""
    event = load_event("turn-complete.json")
    body = {"tenant": T, "agent": A, "session_id": session, "turn_id": turn_id,
            "completed_at": f"2026-11-{day:02d}T14:05:31Z",
            "messages": [{"role": "user", "content": customer}, {"role": "assistant", "content": SAID}]}
    if shown:
        body["shown"] = {"retrieved": [BATERIA], "loaded": list(loaded)}
    event["Records"][0]["body"] = json.dumps(body, ensure_ascii=False)
    return event



SIGHTING = json.dumps([{"name": TELA, "type": "procedure", "description": TELA_DESCRIPTION, "body": TELA_BODY,
                        "evidence": SAID}], ensure_ascii=False)


@pytest.fixture
def agent(store):
    store.put_config(T, A, CONFIG, actor="operator:demo")
    store.create(T, A, make_concept(TELA, type="procedure", description=TELA_DESCRIPTION, body=TELA_BODY,
                                    sources=("sess_0",), created_at=SEEDED, updated_at=SEEDED), actor="engine")
    store.create(T, A, make_concept(BATERIA, description=BATERIA_DESCRIPTION, body="Troca de bateria na hora.",
                                    sources=("sess_0",), created_at=SEEDED, updated_at=SEEDED), actor="engine")
    return store


@pytest.fixture
def loop(monkeypatch, agent, bucket, sessions_bucket, candidates_queue, sqs, bus, model):
    """extract -> CandidatesQueue -> consolidate; the model answers `[]` unless told otherwise."""
    stack = dict(KNOWLEDGE_BUCKET=bucket, SESSIONS_BUCKET=sessions_bucket, UTILITY_MODEL="openai:test-model",
                 OPENAI_BASE_URL=model.base_url, EVENT_BUS_NAME=bus["name"], CANDIDATES_QUEUE_URL=candidates_queue)
    extract = load_handler("extract", monkeypatch, stack,
                           POWERTOOLS_SERVICE_NAME=f"knowledge-learn-{uuid.uuid4().hex[:6]}")
    consolidate = load_handler("consolidate", monkeypatch, stack)

    def run(event: dict, reply: str = "[]") -> None:
        model.responder = lambda request: reply
        assert extract.lambda_handler(event, LambdaContext()) == {"batchItemFailures": []}
        bodies = [m["Body"] for m in drain(sqs, candidates_queue)]
        if bodies:
            assert consolidate.lambda_handler(candidates_event(bodies), LambdaContext()) == {"batchItemFailures": []}

    return run


def learned(store, name: str = TELA) -> list[str]:
    return [entry.word for entry in store.get(T, A, name).concept.learned_words]


def test_a_word_three_sessions_teach_becomes_a_learned_word_written_by_learning_and_two_do_not(loop, store):
    loop(turn_event("sess_1", SAYS, day=18))
    loop(turn_event("sess_2", "minha telinha quebrou, vcs trocam?", day=19))
    assert learned(store) == []
    loop(turn_event("sess_3", "quanto fica pra trocar a telinha?"))
    assert "telinha" in learned(store)
    entry = next(e for e in store.get(T, A, TELA).concept.learned_words if e.word == "telinha")
    assert (entry.origin, entry.sessions, entry.at.isoformat()) == ("loaded", 3, "2026-11-20")
    versions = store.versions(T, A, TELA)
    assert (versions[0].actor, versions[0].reason) == ("learning", "learned")
    assert store.get(T, A, TELA).concept.body == TELA_BODY  # only the field changes
    assert learned(store, BATERIA) == []  # retrieved is not loaded: the other concept learns nothing


def test_a_word_three_of_the_stores_concepts_already_say_is_never_learned_for_another(loop, store):
    for name in ("capinhas", "peliculas", "carregadores"):
        store.create(T, A, make_concept(name, description=f"Acessórios de smart: {name}.",
                                        body="Para todo smart da loja, com garantia.", sources=("sess_0",),
                                        created_at=SEEDED, updated_at=SEEDED), actor="engine")
    for i in range(4):
        loop(turn_event(f"sess_{i}", SAYS, day=10 + i))
    words = learned(store)
    assert "telinha" in words and "smart" not in words  # "smart" means something in the store already


def test_a_turn_extraction_sees_a_known_concept_in_teaches_its_customers_words(loop, store):
    for i in range(3):
        loop(turn_event(f"sess_{i}", f"{SAYS} de novo", loaded=(), day=10 + i), reply=SIGHTING)
    entry = next(e for e in store.get(T, A, TELA).concept.learned_words if e.word == "telinha")
    assert entry.origin == "sighting"


def test_a_redelivered_turn_and_another_turn_of_the_same_session_count_that_session_once(loop, store):
    for _ in range(3):
        loop(turn_event("sess_1", SAYS, day=10))  # the queue delivering one turn three times
    loop(turn_event("sess_1", SAYS, turn_id="t2", day=11))
    loop(turn_event("sess_1", SAYS, turn_id="t3", loaded=(), day=12), reply=SIGHTING)
    loop(turn_event("sess_2", SAYS, day=13))
    assert learned(store) == []
    loop(turn_event("sess_3", SAYS, day=14))
    assert "telinha" in learned(store)


def test_a_word_an_operator_removed_is_never_learned_again_for_that_concept(loop, store):
    current = store.get(T, A, TELA)
    store.replace(T, A, current.concept.replace(removed_words=("telinha",)), if_match=current.etag,
                  actor="operator:ana", reason="edit")
    for i in range(4):
        loop(turn_event(f"sess_{i}", SAYS, day=10 + i))
    words = learned(store)
    assert "telinha" not in words and "rachou" in words
    assert store.get(T, A, TELA).concept.removed_words == ("telinha",)


def test_no_name_number_or_contact_is_ever_learned(loop, store):
    said = ("oi, aqui é a Marcela Fontoura, cpf 123.456.789-09, meu zap 11 98765-4321, "
            "pedido 2024-00931, marcela.fontoura@gmail.com, a telinha rachou")
    for i in range(3):
        loop(turn_event(f"sess_{i}", said, day=10 + i))
    words = learned(store)
    assert "telinha" in words
    assert not any(w in words for w in ("marcela", "fontoura", "gmail"))
    assert not any(ch.isdigit() for w in words for ch in w)


def test_a_turn_without_shown_teaches_nothing(loop, store):
    for i in range(3):
        loop(turn_event(f"sess_{i}", SAYS, shown=False, day=10 + i), reply=SIGHTING)
    assert learned(store) == []


def test_the_learning_ledger_is_in_the_sessions_bucket_under_the_agent_and_holds_no_message(
        loop, s3, sessions_bucket):
    loop(turn_event("sess_1", SAYS))
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=sessions_bucket, Prefix=f"{T}/{A}/learning/")["Contents"]]
    assert keys and all(k.startswith(f"{T}/{A}/learning/") for k in keys)
    assert not any("telinha" in k for k in keys)  # the word is hashed in the key
    bodies = [s3.get_object(Bucket=sessions_bucket, Key=k)["Body"].read().decode() for k in keys]
    assert not any("rachou toda" in b or SAYS in b for b in bodies)


# ------------------------------------------------------------------ recall reads learned words
def retrieve_handler(monkeypatch, bucket, bus):
    return load_handler("retrieve", monkeypatch, dict(KNOWLEDGE_BUCKET=bucket, EVENT_BUS_NAME=bus["name"]),
                        POWERTOOLS_SERVICE_NAME=f"knowledge-retrieve-{uuid.uuid4().hex[:6]}")


def ask(handler, message: str, session: str = "sess_q") -> list[str]:
    event = {"tenant": T, "agent": A, "session_id": session, "message": message}
    return [c["name"] for c in handler.lambda_handler(event, LambdaContext())["concepts"] if not c["linked"]]


def test_a_learned_word_makes_a_message_with_it_recall_its_concept(loop, store, monkeypatch, bucket, bus):
    before = retrieve_handler(monkeypatch, bucket, bus)
    assert TELA not in ask(before, "a telinha rachou")
    for i in range(3):
        loop(turn_event(f"sess_{i}", SAYS, day=10 + i))
    after = retrieve_handler(monkeypatch, bucket, bus)  # a cold start: the learned version
    assert ask(after, "a telinha rachou")[:1] == [TELA]


def with_learned(store, name: str, *words: str) -> None:
    current = store.get(T, A, name)
    entries = tuple(LearnedWord(w, "loaded", 3, SEEDED.date()) for w in words)
    store.replace(T, A, current.concept.replace(learned_words=entries), if_match=current.etag,
                  actor="learning", reason="learned")


def test_a_word_many_concepts_learned_counts_for_none_of_them(agent, monkeypatch, bucket, bus):
    others = ["frete-gratis", "parcelamento", "loja-fisica", "garantia-estendida", "troca-de-bateria",
              "capinhas", "peliculas", "carregadores", "fones", "assistencia"]
    for name in others:
        agent.create(T, A, make_concept(name, description=f"Sobre {name.replace('-', ' ')}.",
                                        body="Texto da loja.", created_at=SEEDED, updated_at=SEEDED), actor="engine")
    with_learned(agent, TELA, "telinha", "gambiarra", "bugiganga")
    handler = retrieve_handler(monkeypatch, bucket, bus)
    assert ask(handler, "gambiarra e bugiganga")[:1] == [TELA]  # learned by one concept: a reading of it
    for name in others[:3]:
        with_learned(agent, name, "gambiarra", "bugiganga")
    handler = retrieve_handler(monkeypatch, bucket, bus)
    assert ask(handler, "gambiarra e bugiganga") == []  # learned by four concepts: tells none of them apart
    assert ask(handler, "gambiarra, a telinha rachou")[:1] == [TELA]  # its own learned word still reaches it


def test_learned_words_add_no_s3_request_to_the_per_turn_retrieve_path(agent, monkeypatch, bucket, bus):
    from shared.aws import client

    handler = retrieve_handler(monkeypatch, bucket, bus)
    ask(handler, "oi")  # the cold start's reads

    def requests_of(messages: list[str]) -> int:
        sent = Counter()
        s3 = client("s3")
        record = lambda **kwargs: sent.update(["s3"])  # noqa: E731
        s3.meta.events.register("before-send.s3", record)
        try:
            for message in messages:
                ask(handler, message)
        finally:
            s3.meta.events.unregister("before-send.s3", record)
        return sent["s3"]

    plain = requests_of(["a tela rachou"] * 5)
    with_learned(agent, TELA, "telinha")
    handler = retrieve_handler(monkeypatch, bucket, bus)
    ask(handler, "oi")
    assert requests_of(["a telinha rachou"] * 5) == plain == 0
    assert ask(handler, "a telinha rachou")[:1] == [TELA]


def test_a_learned_word_alone_reaches_its_concept_however_long_the_concept(agent, monkeypatch, bucket, bus):
    long_body = TELA_BODY + " " + " ".join(f"Modelo {n}: peça original, instalação na hora." for n in range(12))
    agent.create(T, A, make_concept("troca-de-tela-detalhes", type="procedure",
                                    description="Detalhes da troca de tela por modelo.", body=long_body,
                                    created_at=SEEDED, updated_at=SEEDED), actor="engine")
    with_learned(agent, TELA, "telinha")
    with_learned(agent, "troca-de-tela-detalhes", "visor trincado")
    handler = retrieve_handler(monkeypatch, bucket, bus)
    assert ask(handler, "telinha")[:1] == [TELA]  # what customers call it, said alone
    assert ask(handler, "o visor trincado")[:1] == ["troca-de-tela-detalhes"]  # a long concept's too


def test_export_carries_the_learned_and_removed_words(agent, monkeypatch, bucket, sessions_bucket, s3):
    with_learned(agent, TELA, "telinha", "visor")
    current = agent.get(T, A, TELA)
    agent.replace(T, A, current.concept.replace(learned_words=current.concept.learned_words[:1],
                                                removed_words=("visor",)),
                  if_match=current.etag, actor="operator:ana", reason="edit")
    handler = load_handler("export", monkeypatch, dict(KNOWLEDGE_BUCKET=bucket, SESSIONS_BUCKET=sessions_bucket))
    answer = handler.lambda_handler({"agent": A, "label": "learned"}, LambdaContext())
    assert answer["ok"] is True
    exported = s3.get_object(Bucket=sessions_bucket, Key=f"{answer['prefix']}{TELA}.md")["Body"].read()
    concept = parse(exported)
    assert [e.word for e in concept.learned_words] == ["telinha"] and concept.removed_words == ("visor",)
    assert exported == agent.get(T, A, TELA).data


# ------------------------------------------------------------------ the studio: seen, removed, in the history
def test_an_operator_sees_learned_words_in_the_editor_and_removing_one_there_records_it_as_removed(api, store):
    from helpers.studio import BASE

    name = "troca-em-30-dias"
    with_learned(store, name, "destrocar", "devolver")
    status, concept, _ = api("GET", f"{BASE}/concepts/{name}")
    assert status == 200 and 'word: "destrocar"' in concept["markdown"]
    status, history, _ = api("GET", f"{BASE}/concepts/{name}/versions")
    assert (history["versions"][0]["actor"], history["versions"][0]["reason"]) == ("learning", "learned")
    edited = "\n".join(line for line in concept["markdown"].split("\n") if '"destrocar"' not in line)
    status, saved, _ = api("PUT", f"{BASE}/concepts/{name}", body={"markdown": edited},
                           headers={"if-match": concept["etag"]})
    assert status == 200
    kept = store.get(T, A, name).concept
    assert [e.word for e in kept.learned_words] == ["devolver"] and kept.removed_words == ("destrocar",)
    assert 'removed_words: ["destrocar"]' in saved["markdown"]


def test_restoring_a_version_from_before_a_removal_brings_back_the_text_and_never_the_removed_word(api, store):
    from helpers.studio import BASE

    name = "troca-em-30-dias"
    first = store.get(T, A, name)
    with_learned(store, name, "destrocar", "devolver")
    status, concept, _ = api("GET", f"{BASE}/concepts/{name}")
    edited = "\n".join(line for line in concept["markdown"].split("\n") if '"destrocar"' not in line)
    status, _, _ = api("PUT", f"{BASE}/concepts/{name}", body={"markdown": edited}, headers={"if-match": concept["etag"]})
    assert status == 200
    status, restored, _ = api("POST", f"{BASE}/concepts/{name}/versions/{first.version_id}/restore")
    assert status == 200
    now = store.get(T, A, name).concept
    assert now.body == first.concept.body and now.description == first.concept.description
    assert [e.word for e in now.learned_words] == ["devolver"] and now.removed_words == ("destrocar",)
    assert 'removed_words: ["destrocar"]' in restored["markdown"]



def test_restoring_the_version_that_held_a_word_now_removed_brings_back_its_text_without_the_word(api, store):
    """The version restored is one whose learned_words has the word the operator removed since, also
    once the concept is deleted (the restore then takes the learning of the version the delete hid)."""
    from helpers.studio import BASE

    name = "troca-em-30-dias"
    with_learned(store, name, "destrocar", "devolver")
    learned = store.get(T, A, name)
    assert {e.word for e in learned.concept.learned_words} == {"destrocar", "devolver"}
    _, concept, _ = api("GET", f"{BASE}/concepts/{name}")
    edited = "\n".join(line for line in concept["markdown"].split("\n") if '"destrocar"' not in line)
    edited = edited.replace("em até 30 dias após a entrega", "em até 15 dias após a entrega")
    status, _, _ = api("PUT", f"{BASE}/concepts/{name}", body={"markdown": edited},
                       headers={"if-match": concept["etag"]})
    assert status == 200
    for deleted_first in (False, True):
        if deleted_first:
            api("DELETE", f"{BASE}/concepts/{name}")
        status, restored, _ = api("POST", f"{BASE}/concepts/{name}/versions/{learned.version_id}/restore")
        assert status == 200, deleted_first
        now = store.get(T, A, name).concept
        assert "30 dias após a entrega" in now.body  # the text restored
        assert [e.word for e in now.learned_words] == ["devolver"] and now.removed_words == ("destrocar",)
        assert '"destrocar"' not in restored["markdown"].split("removed_words")[0]
        current = store.get(T, A, name)
        store.replace(T, A, current.concept.replace(body=current.concept.body.replace("30 dias", "15 dias")),
                      if_match=current.etag, actor="operator:ana", reason="edit")


# ------------------------------------------------------------------ least privilege
def test_extraction_may_write_concepts_and_their_journal_and_its_learning_ledger_and_nothing_more_of_them():
    from helpers.operations import RESOURCES

    statements = RESOURCES["ExtractFunction"]["Properties"]["Policies"][0]["Statement"]

    def granting(action: str) -> list:
        found = []
        for st in statements:
            if isinstance(st, dict) and action in st.get("Action", []):
                found.extend(st["Resource"] if isinstance(st["Resource"], list) else [st["Resource"]])
        return [r.get("Fn::Sub", r) if isinstance(r, dict) else r for r in found]

    writes = granting("s3:PutObject")
    knowledge = sorted(r for r in writes if isinstance(r, str) and r.startswith("${KnowledgeBucket.Arn}"))
    assert knowledge == ["${KnowledgeBucket.Arn}/agents/*/*/concepts-index/snapshot",
                         "${KnowledgeBucket.Arn}/agents/*/*/concepts/*",
                         "${KnowledgeBucket.Arn}/agents/*/*/learned-words/*", "${KnowledgeBucket.Arn}/journal/*"]
    assert "${SessionsBucket.Arn}/*/*/learning/*" in writes
    assert "${SessionsBucket.Arn}/*/*/learning/*" in granting("s3:GetObject")
    for action in ("s3:DeleteObject", "s3:GetObjectVersion", "s3:ListBucketVersions"):
        assert not any(isinstance(r, str) and r.startswith("${KnowledgeBucket") for r in granting(action))
