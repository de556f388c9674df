"""The review queue through the studio handler: "new and changed since I last looked", kept per
operator in KNOWLEDGE_BUCKET, and the paged history an operator reviews a concept with."""

from __future__ import annotations

import hashlib
import json
from datetime import datetime, timedelta, timezone

import pytest
from helpers.studio import ANA, demo_studio

T, A = "default", "store-support"
BASE = f"/tenants/{T}/agents/{A}"
BIA = {"sub": "b7d2e1f0-4c3a-4e5b-8a9c-0d1e2f3a4b5c", "cognito:groups": "[default]"}


@pytest.fixture
def api(monkeypatch, store, bucket, sessions_bucket):
    studio = demo_studio(monkeypatch, store, bucket, sessions_bucket, POWERTOOLS_LOG_LEVEL="ERROR")

    def call(method, path, **kwargs):
        status, body, _ = studio(method, path, **kwargs)
        return status, body

    call.handler = studio.handler
    return call


def engine_confirms(store, name):
    current = store.get(T, A, name)
    return store.replace(T, A, current.concept.replace(occurrences=current.concept.occurrences + 1),
                         if_match=current.etag, actor="engine", reason="confirmed")


def look(api, claims=ANA):
    """What the operator's page does on "Mark all as seen": the list's as_of, put back."""
    status, page = api("GET", f"{BASE}/concepts", query={"limit": "50"}, claims=claims)
    assert status == 200
    status, state = api("PUT", f"{BASE}/review", body={"seen_at": page["as_of"]}, claims=claims)
    assert status == 200, state
    return state


def new_names(api, claims=ANA):
    status, page = api("GET", f"{BASE}/concepts", claims=claims)
    assert status == 200
    return {row["name"] for row in page["concepts"] if row["new"]}, page["new"]


def test_an_engine_write_after_the_last_look_is_new_until_marked_seen(api, store):
    state = look(api)
    assert state["new"] == 0 and state["seen_at"] == state["since"]
    assert new_names(api) == (set(), 0)
    engine_confirms(store, "troca-em-30-dias")
    status, state = api("GET", f"{BASE}/review")
    assert status == 200 and state["new"] == 1
    rows, count = new_names(api)
    assert rows == {"troca-em-30-dias"} and count == 1
    status, only_new = api("GET", f"{BASE}/concepts", query={"status": "new"})
    assert [row["name"] for row in only_new["concepts"]] == ["troca-em-30-dias"]
    assert only_new["concepts"][0]["written_by"] == "engine"
    assert look(api)["new"] == 0 and new_names(api) == (set(), 0)


def test_an_operator_s_edit_is_new_to_colleagues_and_not_to_the_operator(api, store):
    look(api)
    look(api, claims=BIA)
    _, concept = api("GET", f"{BASE}/concepts/troca-em-30-dias")
    status, _ = api("PUT", f"{BASE}/concepts/troca-em-30-dias", headers={"if-match": concept["etag"]},
                    body={"markdown": concept["markdown"].replace("após a entrega.",
                                                                  "após a entrega, com a nota fiscal.")})
    assert status == 200
    assert new_names(api) == (set(), 0)  # Ana's own edit
    assert new_names(api, claims=BIA) == ({"troca-em-30-dias"}, 1)  # Bia has a colleague's edit to look at
    status, state = api("GET", f"{BASE}/review", claims=BIA)
    assert status == 200 and state["new"] == 1
    _, only_new = api("GET", f"{BASE}/concepts", query={"status": "new"}, claims=BIA)
    [row] = only_new["concepts"]
    assert (row["name"], row["written_by"], row["reason"]) == ("troca-em-30-dias", f"operator:{ANA['sub']}", "edit")


def test_the_state_follows_the_operator_and_not_another(api, store):
    look(api)
    look(api, claims=BIA)
    engine_confirms(store, "rastreio-pedido")
    look(api)  # Ana looks, from any browser: the state is on the server
    assert new_names(api) == (set(), 0)
    assert new_names(api, claims=BIA) == ({"rastreio-pedido"}, 1)  # Bia has not looked since


def test_the_state_is_one_small_object_whose_key_names_no_operator(api, s3, bucket):
    state = look(api)
    key = f"agents/{T}/{A}/reviews/{hashlib.sha256(ANA['sub'].encode()).hexdigest()[:32]}.json"
    stored = s3.get_object(Bucket=bucket, Key=key)
    # The look, nothing marked one by one, and what the mark replaced (never looked) for its undo.
    assert json.loads(stored["Body"].read()) == {"seen_at": state["seen_at"], "reviewed": {},
                                                 "before": {"seen_at": None, "reviewed": {}}}
    assert stored["ContentType"] == "application/json"
    keys = [item["Key"] for item in s3.list_objects_v2(Bucket=bucket, Prefix=f"agents/{T}/{A}/reviews/")["Contents"]]
    assert keys == [key] and ANA["sub"] not in key


def test_marking_seen_only_moves_forward(api):
    later = look(api)["seen_at"]
    earlier = (datetime.fromisoformat(later[:-1]) - timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    status, state = api("PUT", f"{BASE}/review", body={"seen_at": earlier})
    assert status == 200 and state["seen_at"] == later  # another browser's older look changes nothing


def test_a_never_looked_operator_sees_only_the_last_day_as_new(api, store):
    status, state = api("GET", f"{BASE}/review")
    assert status == 200 and state["seen_at"] is None and state["new"] == 7  # all seeded by the engine just now
    as_of = datetime.fromisoformat(state["as_of"][:-1])
    assert as_of - datetime.fromisoformat(state["since"][:-1]) == timedelta(hours=24)
    tomorrow = datetime.now(timezone.utc) + timedelta(days=2)
    api.handler.reviews.store.now = lambda: tomorrow  # two days on, still never looked
    status, state = api("GET", f"{BASE}/review")
    assert status == 200 and state["seen_at"] is None and state["new"] == 0  # no flood of old learning
    assert new_names(api) == (set(), 0)


@pytest.mark.parametrize("seen_at, code", [
    ("2026-02-30T10:00:00Z", "invalid_seen_at"),  # the right shape, a day that does not exist
    ("1999-12-31T23:59:59Z", "invalid_seen_at"),
    ("2026-11-29 10:00:00", "invalid_request"),
    ("2026-11-29T10:00:00+03:00", "invalid_request"),  # UTC only, said as Z
    ("amanhã", "invalid_request"),
])
def test_a_seen_at_that_is_not_a_utc_time_is_422_and_writes_nothing(api, s3, bucket, seen_at, code):
    status, body = api("PUT", f"{BASE}/review", body={"seen_at": seen_at})
    assert status == 422 and body["error"]["code"] == code
    assert s3.list_objects_v2(Bucket=bucket, Prefix=f"agents/{T}/{A}/reviews/")["KeyCount"] == 0


def test_a_seen_at_in_the_future_is_refused(api, s3, bucket):
    ahead = (datetime.now(timezone.utc) + timedelta(hours=2)).strftime("%Y-%m-%dT%H:%M:%SZ")
    status, body = api("PUT", f"{BASE}/review", body={"seen_at": ahead})
    assert status == 422 and body["error"]["code"] == "invalid_seen_at" and "future" in body["error"]["message"]
    assert s3.list_objects_v2(Bucket=bucket, Prefix=f"agents/{T}/{A}/reviews/")["KeyCount"] == 0


def test_an_unknown_agent_is_404_and_gets_no_state(api, s3, bucket):
    now = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    status, body = api("PUT", f"/tenants/{T}/agents/store-suport/review", body={"seen_at": now})
    assert status == 404 and body["error"]["code"] == "unknown_agent"
    status, body = api("GET", f"/tenants/{T}/agents/store-suport/review")
    assert status == 404 and body["error"]["code"] == "unknown_agent"
    assert s3.list_objects_v2(Bucket=bucket, Prefix=f"agents/{T}/store-suport/")["KeyCount"] == 0
    status, agents = api("GET", f"/tenants/{T}/agents")
    assert [agent["name"] for agent in agents["agents"]] == [A]  # no agent made by a look at a typo


def test_another_tenant_s_review_is_403_and_no_token_401(api):
    other = {"sub": ANA["sub"], "cognito:groups": "[tenant-b]"}
    now = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert api("GET", f"{BASE}/review", claims=other)[0] == 403
    assert api("PUT", f"{BASE}/review", body={"seen_at": now}, claims=other)[0] == 403
    assert api("GET", f"{BASE}/review", claims=None)[0] == 401


# ------------------------------------------------------------------ triage: why, by whom, one at a time, undo

def test_each_row_says_why_and_by_whom_its_current_version_was_written(api, store):
    look(api)
    engine_confirms(store, "rastreio-pedido")
    for name, reason in (("cep-sudeste-cd-campinas", "merged"), ("troca-em-30-dias", "kept_beside"),
                         ("prazo-reembolso-pix", "contradiction")):
        current = store.get(T, A, name)
        store.replace(T, A, current.concept.replace(occurrences=current.concept.occurrences + 1),
                      if_match=current.etag, actor="engine", reason=reason)
    _, concept = api("GET", f"{BASE}/concepts/objecao-frete-caro")
    api("PUT", f"{BASE}/concepts/objecao-frete-caro", headers={"if-match": concept["etag"]},
        body={"markdown": concept["markdown"].replace("description: ", "description: Edited. ")}, claims=BIA)
    status, page = api("GET", f"{BASE}/concepts")
    assert status == 200
    rows = {row["name"]: (row["reason"], row["written_by"], row["new"]) for row in page["concepts"]}
    assert rows == {
        "rastreio-pedido": ("confirmed", "engine", True),
        "cep-sudeste-cd-campinas": ("merged", "engine", True),
        "troca-em-30-dias": ("kept_beside", "engine", True),
        "prazo-reembolso-pix": ("contradiction", "engine", True),
        "objecao-frete-caro": ("edit", f"operator:{BIA['sub']}", True),  # a colleague's edit is new to Ana
        "frete-gratis-acima-199": ("created", "engine", False),
        "parcelamento-sem-juros-10x": ("created", "engine", False),
    }
    assert page["new"] == 5


def mark_reviewed(api, name, written_at, claims=ANA):
    return api("PUT", f"{BASE}/review/concepts/{name}", body={"written_at": written_at}, claims=claims)


def row_of(api, name, claims=ANA):
    _, page = api("GET", f"{BASE}/concepts", claims=claims)
    return next(row for row in page["concepts"] if row["name"] == name)


def test_one_concept_marked_reviewed_is_no_longer_new_until_it_is_written_again(api, store):
    assert new_names(api)[1] == 7  # never looked: the seeding of the last day
    seen = row_of(api, "troca-em-30-dias")
    status, state = mark_reviewed(api, "troca-em-30-dias", seen["written_at"])
    assert status == 200 and state["new"] == 6 and state["seen_at"] is None  # one, not all
    rows, count = new_names(api)
    assert "troca-em-30-dias" not in rows and count == 6
    assert new_names(api, claims=BIA)[1] == 7  # Bia's queue is hers
    engine_confirms(store, "troca-em-30-dias")  # a later version is new again
    rows, count = new_names(api)
    assert "troca-em-30-dias" in rows and count == 7
    assert mark_reviewed(api, "troca-em-30-dias", seen["written_at"])[1]["new"] == 7  # the row seen before: still new


def test_mark_all_as_seen_can_be_undone_once_with_the_concepts_marked_one_by_one_before_it(api, store):
    seen = row_of(api, "troca-em-30-dias")
    mark_reviewed(api, "troca-em-30-dias", seen["written_at"])
    state = look(api)
    assert state["new"] == 0 and state["undo"] is True
    status, undone = api("POST", f"{BASE}/review/undo", body={"seen_at": state["seen_at"]})
    assert status == 200, undone
    assert undone["seen_at"] is None and undone["new"] == 6 and undone["undo"] is False  # as before the mark
    rows, count = new_names(api)
    assert count == 6 and "troca-em-30-dias" not in rows  # the one marked reviewed stays reviewed
    status, body = api("POST", f"{BASE}/review/undo", body={"seen_at": state["seen_at"]})
    assert status == 409 and body["error"]["code"] == "nothing_to_undo"  # once
    assert new_names(api)[1] == 6


def test_an_undo_after_another_look_changes_nothing(api):
    first = look(api)
    second = look(api)  # another browser, later
    assert second["seen_at"] > first["seen_at"]
    status, body = api("POST", f"{BASE}/review/undo", body={"seen_at": first["seen_at"]})
    assert status == 409 and body["error"]["code"] == "nothing_to_undo"
    status, state = api("GET", f"{BASE}/review")
    assert state["seen_at"] == second["seen_at"] and state["new"] == 0


@pytest.mark.parametrize("path, body, status, code", [
    ("/review/concepts/troca-em-30-dias", {"written_at": "ontem"}, 422, "invalid_request"),
    ("/review/concepts/troca-em-30-dias", {"written_at": "2026-02-30T10:00:00Z"}, 422, "invalid_reviewed"),
    ("/review/concepts/troca-em-30-dias", {"written_at": "2999-01-01T00:00:00Z"}, 422, "invalid_reviewed"),
    ("/review/concepts/Troca", {"written_at": "2026-11-29T10:00:00Z"}, 400, "invalid_name"),
    ("/review/undo", {"seen_at": "2026-11-29T10:00:00Z"}, 409, "nothing_to_undo"),
    ("/review/undo", {}, 422, "invalid_request"),
])
def test_a_refused_review_change_is_said_and_writes_nothing(api, s3, bucket, path, body, status, code):
    method = "POST" if path.endswith("undo") else "PUT"
    got, answer = api(method, BASE + path, body=body)
    assert (got, answer["error"]["code"]) == (status, code), answer
    assert s3.list_objects_v2(Bucket=bucket, Prefix=f"agents/{T}/{A}/reviews/")["KeyCount"] == 0


def test_reviewing_in_an_unknown_agent_is_404_and_makes_no_agent(api, s3, bucket):
    now = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    status, body = api("PUT", f"/tenants/{T}/agents/store-suport/review/concepts/x", body={"written_at": now})
    assert status == 404 and body["error"]["code"] == "unknown_agent"
    status, body = api("POST", f"/tenants/{T}/agents/store-suport/review/undo", body={"seen_at": now})
    assert status == 404 and body["error"]["code"] == "unknown_agent"
    assert s3.list_objects_v2(Bucket=bucket, Prefix=f"agents/{T}/store-suport/")["KeyCount"] == 0


def test_the_agents_list_counts_what_is_new_to_each_operator(api, store):
    from helpers.concepts import make_concept

    store.create(T, "loja-centro", make_concept("horario-loja", description="A loja abre às 9h."), actor="engine")
    look(api)
    engine_confirms(store, "rastreio-pedido")
    status, body = api("GET", f"/tenants/{T}/agents")
    assert status == 200
    assert {agent["name"]: agent["new"] for agent in body["agents"]} == {"loja-centro": 1, A: 1}
    _, body = api("GET", f"/tenants/{T}/agents", claims=BIA)
    assert {agent["name"]: agent["new"] for agent in body["agents"]} == {"loja-centro": 1, A: 7}


# ------------------------------------------------------------------ two browsers at once

class Racing:
    """An S3 client whose first conditional put meets another browser's write, landed just before."""

    def __init__(self, s3, bucket, key, theirs):
        self._s3, self._bucket, self._key, self._theirs = s3, bucket, key, theirs
        self.puts = 0

    def __getattr__(self, name):
        return getattr(self._s3, name)

    def put_object(self, **kwargs):
        self.puts += 1
        if self.puts == 1:
            self._s3.put_object(Bucket=self._bucket, Key=self._key, Body=json.dumps({"seen_at": self._theirs}).encode())
        return self._s3.put_object(**kwargs)


@pytest.mark.parametrize("their_offset, kept", [(timedelta(minutes=5), "theirs"), (timedelta(minutes=-5), "mine")])
def test_two_browsers_marking_at_once_keep_the_later_look(s3, bucket, their_offset, kept):
    from knowledge.curation.reviews import ReviewStore, format_seen_at, review_key

    mine = datetime.now(timezone.utc) - timedelta(minutes=10)
    theirs = format_seen_at(mine + their_offset)
    racing = Racing(s3, bucket, review_key(T, A, ANA["sub"]), theirs)
    reviews = ReviewStore(racing, bucket)
    stored = reviews.mark_seen(T, A, ANA["sub"], mine)
    assert format_seen_at(stored) == (theirs if kept == "theirs" else format_seen_at(mine))
    assert reviews.get(T, A, ANA["sub"]).seen_at == stored
    assert racing.puts == (1 if kept == "theirs" else 2)  # a lost race is re-read, never written over blindly


def test_a_state_that_does_not_parse_counts_as_never_looked_and_is_replaced(s3, bucket):
    from knowledge.curation.reviews import ReviewStore, review_key

    s3.put_object(Bucket=bucket, Key=review_key(T, A, ANA["sub"]), Body=b'["not", "a", "state"]')
    reviews = ReviewStore(s3, bucket)
    assert reviews.get(T, A, ANA["sub"]).seen_at is None
    moment = datetime.now(timezone.utc) - timedelta(seconds=1)
    assert reviews.mark_seen(T, A, ANA["sub"], moment) == moment
    assert reviews.get(T, A, ANA["sub"]).seen_at == moment


# ------------------------------------------------------------------ reviewing one concept: paged history

def test_history_comes_a_page_at_a_time_to_its_first_version_and_says_how_long_it_lasts(api, store):
    for _ in range(44):
        engine_confirms(store, "rastreio-pedido")
    seen, cursor = [], None
    while True:
        status, page = api("GET", f"{BASE}/concepts/rastreio-pedido/versions",
                           query={"limit": "20", **({"cursor": cursor} if cursor else {})})
        assert status == 200 and page["kept"] == {"newest": 20, "days": 30}
        seen += page["versions"]
        cursor = page["next"]
        if cursor is None:
            break
    assert [len(seen), seen[0]["latest"], seen[-1]["reason"]] == [45, True, "created"]
    assert len({v["version_id"] for v in seen}) == 45  # no version twice across pages
    status, body = api("GET", f"{BASE}/concepts/rastreio-pedido/versions", query={"cursor": "3LlD+Zc="})
    assert status == 422 and body["error"]["code"] == "invalid_request"  # a raw version id is not a cursor


def test_the_deleted_list_says_who_deleted_each_concept(api, store):
    store.delete(T, A, "objecao-frete-caro", actor="operator:bia")
    status, body = api("GET", f"{BASE}/deleted")
    assert status == 200
    [row] = body["deleted"]
    assert row["name"] == "objecao-frete-caro" and row["deleted_by"] == "operator:bia" and row["deleted_at"]
