"""An operator's own learned words (`origin: operator`): the traffic's learning and the model's words never
overwrite or drop one, `knowledge words audit` never takes one out, forgetting a customer never does either,
and recall reads one as a word customers wrote (whole, never as the model's guess)."""

from __future__ import annotations

from datetime import date

import pytest
from helpers.concepts import make_concept

from knowledge.format.config import KnowledgeConfig
from knowledge.format.learned_words import LearnedWord
from knowledge.format.turn import Turn
from knowledge.learning.model_words import gate_words
from knowledge.learning.traffic_words import Teacher
from knowledge.operation.unlearn import ForgetWords
from knowledge.operation.word_audit import audit_words
from knowledge.recall.index import Index
from knowledge.recall.postings import LEARNED, TAUGHT, concept_terms
from knowledge.store.learning_ledger import WordLedger, customer_teacher
from shared.purge import PurgeReport, Sweeper

T, A = "default", "store-support"
TELA, BATERIA = "troca-de-tela", "bateria-original"
DAY = date(2026, 12, 1)
OPERATOR = LearnedWord("telinha", "operator", 0, DAY)


@pytest.fixture
def agent(store):
    store.create(T, A, make_concept(TELA, type="procedure", description="Troca de tela de celular na loja.",
                                    body="Trocamos a tela quebrada do seu celular em até 2 horas."), actor="engine")
    store.create(T, A, make_concept(BATERIA, description="Baterias originais com garantia de um ano.",
                                    body="Troca de bateria na hora."), actor="engine")
    return store


@pytest.fixture
def ledger(s3, sessions_bucket, bucket):
    return WordLedger(s3, sessions_bucket, bucket)


def words_of(store, name=TELA):
    return [(e.word, e.origin, e.sessions) for e in store.get(T, A, name).concept.learned_words]


def give(store, name, *words, actor="operator:ana"):
    current = store.get(T, A, name)
    return store.replace(T, A, current.concept.replace(learned_words=tuple(words)), if_match=current.etag,
                         actor=actor, reason="edit")


def index_of(store):
    index = Index()
    for name in (TELA, BATERIA):
        stored = store.get(T, A, name)
        index.upsert(name, stored.etag, stored.concept, stored.data)
    index.settle()
    return index


def turn(n: int, said: str) -> Turn:
    return Turn.model_validate({
        "tenant": T, "agent": A, "session_id": f"sess_{n}", "turn_id": "t1", "customer_id": f"cus_{n}",
        "completed_at": f"2026-12-0{2 + n}T14:05:31Z", "shown": {"retrieved": [], "loaded": [TELA]},
        "messages": [{"role": "user", "content": said}, {"role": "assistant", "content": "Trocamos em 2 horas."}]})


def teach_three(store, ledger, index_before=None):
    teacher = Teacher(store, ledger)
    for n in range(3):
        teacher.learn(turn(n, "a telinha do celular rachou"), (), index_before or index_of(store), KnowledgeConfig())


@pytest.mark.parametrize("index_read", ["after the operator's word", "before it (a container not caught up)"])
def test_the_traffic_learns_beside_an_operators_word_and_never_makes_it_its_own(agent, ledger, index_read):
    stale = index_of(agent) if index_read.startswith("before") else None
    give(agent, TELA, OPERATOR)
    teach_three(agent, ledger, stale)
    assert words_of(agent) == [("telinha", "operator", 0), ("rachou", "loaded", 3)]


def test_the_traffic_never_drops_an_operators_word_to_make_room(agent, ledger):
    mine = tuple(LearnedWord(f"palavra {chr(97 + i)}", "operator", 0, DAY) for i in range(24))
    give(agent, TELA, *mine)
    teach_three(agent, ledger)
    assert words_of(agent) == [(w.word, "operator", 0) for w in mine]


def test_the_models_words_never_repeat_or_replace_an_operators_word():
    concept = make_concept(TELA, description="Troca de tela de celular na loja.",
                           body="Trocamos a tela quebrada.").replace(learned_words=(OPERATOR,))
    kept, refused = gate_words(["Telinha", "visor trincado"], concept)
    assert kept == ["visor trincado"] and refused == {"learned_already": 1}
    full = concept.replace(learned_words=tuple(LearnedWord(f"palavra {chr(97 + i)}", "operator", 0, DAY)
                                               for i in range(24)))
    assert gate_words(["visor trincado"], full) == ([], {"full": 1})


def test_the_audit_never_takes_out_an_operators_word_whatever_the_traffic_rules_say(agent, ledger):
    # Each would be taken out were the traffic its teacher: a name, another concept's own word, no teacher.
    mine = [LearnedWord(w, "operator", 0, DAY) for w in ("marcela", "bateria", "vidrinho")]
    give(agent, TELA, *mine, LearnedWord("joana", "loaded", 3, DAY))
    report = audit_words(agent, ledger, T, A)
    assert [(f.word, f.reason) for f in report.out] == [("joana", "name")] and report.checked == 1
    assert words_of(agent) == [(w.word, "operator", 0) for w in mine]


def test_forgetting_a_customer_who_taught_a_word_an_operator_since_made_their_own_keeps_it(agent, ledger, s3):
    teach_three(agent, ledger)
    assert words_of(agent)[0] == ("telinha", "loaded", 3)
    traffic_version = agent.get(T, A, TELA).version_id
    # The operator removes the traffic's word, then adds it back as their own: no customer's any more.
    give(agent, TELA, *[e for e in agent.get(T, A, TELA).concept.learned_words if e.word != "telinha"])
    give(agent, TELA, OPERATOR, *agent.get(T, A, TELA).concept.learned_words)
    report = PurgeReport()
    ForgetWords(agent, ledger).forget(Sweeper(s3, report), T, A, frozenset({customer_teacher(T, "cus_1")}))
    assert ("telinha", "operator", 0) in words_of(agent)
    # The versions where the traffic's word stood, which she taught, go as the purge says.
    assert traffic_version not in {v.version_id for v in agent.versions(T, A, TELA)}
    assert report.complete and report.concepts[f"{A}/{TELA}"] >= 1


def test_recall_reads_an_operators_word_whole_as_a_word_customers_wrote():
    base = make_concept(TELA, description="Troca de tela de celular na loja.", body="Trocamos a tela quebrada.")
    by_operator = concept_terms(base.replace(learned_words=(OPERATOR,)))[0]
    by_traffic = concept_terms(base.replace(learned_words=(LearnedWord("telinha", "loaded", 3, DAY),)))[0]
    by_model = concept_terms(base.replace(learned_words=(LearnedWord("telinha", "model", 0, DAY),)))[0]
    assert by_operator == by_traffic and TAUGHT not in by_operator and TAUGHT in by_model
    assert [t for t in by_operator if t.startswith(LEARNED)]
