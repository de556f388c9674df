"""The ledger on a re-distil, through DistillFunction (moto's S3 and EventBridge, the scripted model
server): which new facts the cap lets through, and which values the latch takes for the same.

A value written another way ("sabado de manha", "ate R$ 2500", "dois gatos") is the same tuple as
the one dismissed; another number or word is not. Latches and proposals written before values were
folded keep holding what they held.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from helpers.aws import drain
from helpers.facts_page import CONVERSATION, CUSTOMER, KEY, conversation
from helpers.handlers import LambdaContext, load_event, load_handler

from facts import layout
from facts.cells import MemoryCells
from facts.keyed_hashes import FactKeys
from facts.proposals import ProposalStore, ref_of
from facts.review import Review
from facts.sessions import record_turn
from knowledge.format.turn import Turn
from knowledge.store.archive import TurnArchive
from shared.events import EventBridgeEvents

T, A = "default", "store-support"


@pytest.fixture
def distill(monkeypatch, facts_stack):
    return load_handler("distill", monkeypatch, facts_stack)


@pytest.fixture
def proposals(s3, sessions_bucket):
    return ProposalStore(s3, sessions_bucket)


@pytest.fixture
def review(s3, bucket, sessions_bucket, bus):
    from shared.aws import client

    return Review(ProposalStore(s3, sessions_bucket), MemoryCells(s3, bucket), FactKeys(KEY),
                  EventBridgeEvents(lambda: client("events"), bus["name"]))


def run(handler) -> dict:
    return handler.lambda_handler(load_event("distill.json"), LambdaContext())


def answer(*items) -> str:
    return json.dumps(list(items), ensure_ascii=False)


def published(sqs, bus) -> list[dict]:
    return [json.loads(m["Body"]) for m in drain(sqs, bus["queue"])]


def pending(proposals) -> dict[str, str]:
    return {p.proposal.name: p.proposal.value for p in proposals.list(T, A, CUSTOMER)
            if p.proposal.status == "pending"}


def another_turn(s3, sessions_bucket, session: str, hours_ago: float) -> None:
    """The session goes on: one more turn, archived and recorded as the extraction path does."""
    turn = Turn(tenant=T, agent=A, session_id=session, turn_id="turn_0007", customer_id=CUSTOMER,
                completed_at=datetime.now(UTC) - timedelta(hours=hours_ago),
                messages=[{"role": r, "content": c} for r, c in CONVERSATION[0]])
    TurnArchive(s3, sessions_bucket).put(turn)
    record_turn(s3, sessions_bucket, turn)


def test_facts_already_decided_or_pending_do_not_use_up_max_proposals_of_a_redistilled_session(
        distill, s3, sessions_bucket, script, proposals, review, sqs, bus):
    first = [{"name": f"fato_{i}", "value": f"valor {i}", "evidence": [0]} for i in range(5)]
    conversation(s3, sessions_bucket, "sess_a")
    script.replies = [answer(*first)]
    assert run(distill)["proposed"] == 5
    [decided] = [p.proposal for p in proposals.list(T, A, CUSTOMER) if p.proposal.name == "fato_0"]
    review.dismiss(ref_of(decided), "op-maria")
    # The session goes on and is distilled again: the model lists the five it said before, then a new one.
    another_turn(s3, sessions_bucket, "sess_a", hours_ago=7)
    new = {"name": "cep_entrega", "value": "13010-000", "evidence": [1]}
    script.replies = [answer(*first, new)]
    report = run(distill)
    assert report["proposed"] == 1 and report["filtered"] == {"latched": 1, "duplicate": 4}
    assert report["rejected"] == {}
    assert pending(proposals)["cep_entrega"] == "13010-000"
    kinds = [(e["detail-type"], e["detail"]["name"]) for e in published(sqs, bus)]
    assert kinds.count(("fact_proposed", "cep_entrega")) == 1


@pytest.mark.parametrize("dismissed, again", [
    ("sábado de manhã", "sábado de manhã."),
    ("sábado de manhã", "sabado de manha"),
    ("sábado de manhã", "Sábado  de   Manhã!"),
    ("até R$ 2.500", "ate R$ 2500"),
    ("até R$ 2.500", "até R$2.500,00"),
    ("2 gatos", "dois gatos"),
    ("duas filhas", "2 filhas"),
    ("1,5 kg", "1,50 kg"),
])
def test_a_dismissed_value_written_another_way_is_still_latched(
        distill, s3, sessions_bucket, script, proposals, review, dismissed, again):
    conversation(s3, sessions_bucket, "sess_a")
    script.replies = [answer({"name": "preferencia", "value": dismissed, "evidence": [0]})]
    run(distill)
    [first] = [p.proposal for p in proposals.list(T, A, CUSTOMER)]
    review.dismiss(ref_of(first), "op-maria")
    conversation(s3, sessions_bucket, "sess_b")
    script.replies = [answer({"name": "preferencia", "value": again, "evidence": [0]})]
    report = run(distill)
    assert (report["proposed"], report["filtered"]) == (0, {"latched": 1})


@pytest.mark.parametrize("dismissed, other", [
    ("2 gatos", "3 gatos"),
    ("até R$ 2.500", "até R$ 3.500"),
    ("até R$ 2.500", "até R$ 25.000"),
    ("1,5 kg", "15 kg"),
    ("sábado de manhã", "sábado à tarde"),
])
def test_a_different_value_after_a_dismissal_is_still_proposed(
        distill, s3, sessions_bucket, script, proposals, review, dismissed, other):
    conversation(s3, sessions_bucket, "sess_a")
    script.replies = [answer({"name": "preferencia", "value": dismissed, "evidence": [0]})]
    run(distill)
    [first] = [p.proposal for p in proposals.list(T, A, CUSTOMER)]
    review.dismiss(ref_of(first), "op-maria")
    conversation(s3, sessions_bucket, "sess_b")
    script.replies = [answer({"name": "preferencia", "value": other, "evidence": [0]})]
    assert run(distill)["proposed"] == 1 and pending(proposals) == {"preferencia": other}


def legacy_tuple_id(tenant, customer, name, value) -> str:
    """The tuple id as it was written before values were folded (Unicode form, case, spacing)."""
    import hashlib
    import hmac
    import unicodedata

    latch_key = hmac.new(KEY.encode(), b"facts/latch/v1", hashlib.sha256).digest()
    folded = " ".join(unicodedata.normalize("NFC", value).split()).casefold()
    message = f"{tenant}\x1f{customer}\x1f{name}\x1f{folded}".encode()
    return hmac.new(latch_key, message, hashlib.sha256).hexdigest()[:32]


def test_latches_and_pending_proposals_written_before_the_fold_still_hold(
        distill, s3, bucket, sessions_bucket, script, proposals):
    # Before: "sábado de manhã" was dismissed (its latch under the old id), "até R$ 2.500" waits.
    s3.put_object(Bucket=bucket, Key=layout.latch_key(T, CUSTOMER, legacy_tuple_id(T, CUSTOMER, "dia", "sábado de manhã")),
                  Body=b"")
    conversation(s3, sessions_bucket, "sess_a")
    script.replies = [answer({"name": "limite", "value": "até R$ 2.500", "evidence": [0]})]
    run(distill)
    [waiting] = [p.proposal for p in proposals.list(T, A, CUSTOMER)]
    old_id = legacy_tuple_id(T, CUSTOMER, "limite", "até R$ 2.500")
    if waiting.id != old_id:  # stored as it was before: under the old id
        s3.put_object(Bucket=sessions_bucket, Key=layout.proposal_key(T, A, CUSTOMER, old_id),
                      Body=waiting.model_copy(update={"id": old_id}).body())
        s3.delete_object(Bucket=sessions_bucket, Key=ref_of(waiting).key)
    conversation(s3, sessions_bucket, "sess_b")
    script.replies = [answer({"name": "dia", "value": "sábado de manhã", "evidence": [0]},
                             {"name": "limite", "value": "até R$ 2.500", "evidence": [0]})]
    report = run(distill)
    assert (report["proposed"], report["filtered"]) == (0, {"latched": 1, "duplicate": 1})
    assert [p.proposal.id for p in proposals.list(T, A, CUSTOMER)] == [old_id]
