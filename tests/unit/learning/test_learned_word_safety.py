"""What may never become a learned word, and when a word's teachers are enough: no word standing where a
person's name stands is a candidate (on the names sets too), and one visitor alone never teaches a word."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest
from helpers.paths import ROOT

from knowledge.format.learned_words import fold_word
from knowledge.format.turn import Turn
from knowledge.learning.traffic_words import customer_words
from knowledge.learning.word_rule import SPREAD, enough
from knowledge.store.learning_ledger import Teaching, customer_teacher, teacher_id


def candidates(text: str) -> set[str]:
    turn = Turn.model_validate({"tenant": "default", "agent": "store-support", "session_id": "s1", "turn_id": "t1",
                                "completed_at": "2026-11-20T14:05:31Z",
                                "messages": [{"role": "user", "content": text}]})
    return {fold_word(word) for _, word in customer_words(turn)}


@pytest.mark.parametrize("text, name", [
    ("aqui é da família bortolotto, a telinha rachou", "bortolotto"),
    ("oi sou o kleberson, a telinha rachou", "kleberson"),
    ("meu nome é zuleide carvalhaes e a telinha rachou", "carvalhaes"),
    ("bortolotto aqui de novo, a telinha rachou", "bortolotto"),
    ("a telinha rachou de novo\nbortolotto", "bortolotto"),
    ("o pedido da Bortolotto chegou com a telinha rachada", "bortolotto"),
    ("Bortolotto, a telinha rachou", "bortolotto"),
    ("a atendente, zuleide, disse que a telinha tem conserto", "zuleide"),
    ("a zuleide disse que a telinha tem conserto", "zuleide"),
    ("o kleberson falou que a telinha tem conserto", "kleberson"),
    ("a telinha da marcela rachou", "marcela"),  # a given name, in any case
])
def test_a_word_standing_where_a_name_stands_is_never_a_candidate(text, name):
    found = candidates(text)
    assert name not in found
    assert "telinha" in found  # the rest of the message still teaches


def test_a_capitalised_word_opening_a_sentence_of_the_customers_own_words_still_teaches():
    assert {"telinha", "rachou"} <= candidates("Telinha rachou, vcs trocam?") | candidates("Rachou a telinha toda")
    assert "telinha" in candidates("Minha telinha rachou")


def test_a_message_in_capitals_throughout_says_nothing_by_its_case():
    assert {"telinha", "rachou"} <= candidates("A TELINHA RACHOU TODA, VCS TROCAM?")


def names_set(name: str) -> list[dict]:
    path = ROOT / "tests" / "data" / f"pii_names_{name}.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.mark.parametrize("name", ["tune", "heldout"])
def test_no_name_of_the_names_sets_becomes_a_candidate(name):
    examples = names_set(name)
    leaked = []
    for example in examples:
        found = candidates(example["text"])
        for person in example["people"]:
            leaked += [(example["id"], w) for w in (fold_word(p) for p in person.replace("-", " ").split())
                       if w in found]
    assert leaked == []
    assert sum(len(e["people"]) for e in examples) > 150  # the sets are there, and large


# ------------------------------------------------------------------ the counting rule
DAY = datetime(2026, 10, 14, 12, 0, tzinfo=timezone.utc)


def customers(*hours: float) -> list[Teaching]:
    return [Teaching(customer_teacher("default", f"cus_{i}"), DAY + timedelta(hours=h)) for i, h in enumerate(hours)]


def sessions(*hours: float) -> list[Teaching]:
    return [Teaching(f"sess_{i}", DAY + timedelta(hours=h)) for i, h in enumerate(hours)]


def test_distinct_customers_teach_at_once_and_sessions_need_their_teachings_half_a_day_apart():
    assert enough(customers(0, 0.01, 0.02), 3)  # three customers, minutes apart
    assert not enough(customers(0, 1), 3)
    assert not enough(sessions(0, 0.05, 0.1), 3)  # one visitor's three chats in a few minutes
    assert not enough(sessions(0, 1, SPREAD.total_seconds() / 3600 - 0.01), 3)
    assert enough(sessions(0, 0.05, 24), 3)  # on two different days
    assert enough(customers(0, 0.01) + sessions(30), 3)
    assert not enough(customers(0, 0.01) + sessions(0.02), 3)
    assert not enough(sessions(0, 24), 3)


def test_a_customer_teaches_as_a_hash_of_the_tenant_and_their_id_and_a_turn_without_one_as_its_session():
    mine = teacher_id("default", "cus_20931", "sess_1")
    assert mine == teacher_id("default", "cus_20931", "sess_2") != teacher_id("other", "cus_20931", "sess_1")
    assert "cus_20931" not in mine and mine.startswith("c~")
    assert teacher_id("default", None, "sess_1") == "sess_1"
