"""The ledger on a re-distil, through DistillFunction (moto's S3 and EventBridge, the scripted model
server): which values the latch takes for the same.

A value written another way ("sabado de manha", "ate R$ 2500", "dois gatos") is the same tuple as
the one dismissed; another number or word is not. Latches and proposals written before values were
folded keep holding what they held.
"""

from __future__ import annotations

import json

import pytest
from helpers.facts_page import CONFIG, CUSTOMER, KEY, conversation
from helpers.handlers import LambdaContext, load_event, load_handler

from facts import layout
from facts.cells import MemoryCells
from facts.keys import FactKeys
from facts.proposals import ProposalStore, ref_of
from facts.review import Review
from shared.events import EventBridgeEvents

T, A = "default", "store-support"


@pytest.fixture
def env(bucket, sessions_bucket, bus, model, s3):
    s3.put_object(Bucket=bucket, Key=f"agents/{T}/{A}/knowledge.yaml", Body=CONFIG.encode())
    return {"KNOWLEDGE_BUCKET": bucket, "SESSIONS_BUCKET": sessions_bucket, "EVENT_BUS_NAME": bus["name"],
            "UTILITY_MODEL": "openai:distiller", "OPENAI_BASE_URL": model.base_url, "FACTS_KEY": KEY}


@pytest.fixture
def distill(monkeypatch, env):
    return load_handler("distill", monkeypatch, **env)


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


def pending(proposals) -> dict[str, str]:
    return {p.proposal.name: p.proposal.value for p in proposals.list(T, A, CUSTOMER)
            if p.proposal.status == "pending"}


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
