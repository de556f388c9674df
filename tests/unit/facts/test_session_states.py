"""Facts' session states: each archived turn recorded for distillation (facts.sessions.record_turn),
on moto's S3. What a pass does with them is the integration tier's (test_facts_distill.py)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta, timezone

from helpers.facts_page import CONVERSATION, A, T, archive, turn

from facts import layout
from facts.sessions import SessionStates

NOW = datetime.now(timezone.utc)


def test_the_earliest_tagged_turn_fixes_the_customer_whatever_the_arrival_order(s3, sessions_bucket):
    start = NOW - timedelta(hours=8)
    late = turn("sess_ordem", 1, start + timedelta(minutes=5), CONVERSATION[1], customer="cust-segundo")
    early = turn("sess_ordem", 0, start, CONVERSATION[0], customer="cust-primeiro")
    archive(s3, sessions_bucket, late, early)
    state = SessionStates(s3, sessions_bucket).get(T, A, "sess_ordem").state
    assert state.customer_id == "cust-primeiro" and len(state.turns) == 2 and state.messages == 4
    again = turn("sess_ordem", 2, start + timedelta(minutes=9), CONVERSATION[0], customer="cust-terceiro")
    archive(s3, sessions_bucket, again)
    assert SessionStates(s3, sessions_bucket).get(T, A, "sess_ordem").state.customer_id == "cust-primeiro"


def test_parallel_turns_of_one_session_are_all_recorded(s3, sessions_bucket):
    start = NOW - timedelta(hours=9)
    turns = [turn("sess_paralela", i, start + timedelta(seconds=i), CONVERSATION[i % 2]) for i in range(12)]
    with ThreadPoolExecutor(6) as pool:
        list(pool.map(lambda t: archive(s3, sessions_bucket, t), turns))
    state = SessionStates(s3, sessions_bucket).get(T, A, "sess_paralela").state
    assert len(state.turns) == 12 and state.last_at == turns[-1].completed_at
    markers = s3.list_objects_v2(Bucket=sessions_bucket, Prefix=layout.idle_prefix(T, A))["Contents"]
    assert [m["Key"] for m in markers] == [layout.idle_key(T, A, state.last_at, "sess_paralela")]
