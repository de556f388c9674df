"""The list's bulk actions through the studio handler on moto: many rows marked reviewed in one action
(each row's outcome, the new count after), a bulk delete undone in one action, a change of type by
compare-and-swap, and requests refused whole and clearly (over 500 rows, a name twice, a bad action,
type or written_at)."""

from __future__ import annotations

import pytest
from helpers.studio import BASE, A, T

BIA = {"sub": "b7d2e1f0-4c3a-4e5b-8a9c-0d1e2f3a4b5c", "cognito:groups": "[default]"}  # another operator
BULK = f"{BASE}/concepts/bulk"


def listed(api, **query):
    _, body, _ = api("GET", f"{BASE}/concepts", query={"limit": "50", **query})
    return body


def test_rows_marked_reviewed_at_once_each_say_their_outcome_and_leave_the_queue(api):
    rows = [{"name": c["name"], "written_at": c["written_at"]} for c in listed(api, status="new")["concepts"]]
    assert len(rows) >= 4
    status, body, _ = api("POST", BULK, body={"action": "reviewed", "rows": rows[:3]})
    assert status == 200 and body["complete"]
    assert [(r["name"], r["outcome"]) for r in body["rows"]] == [(r["name"], "reviewed") for r in rows[:3]]
    assert body["counts"] == {"reviewed": 3} and body["review"]["new"] == len(rows) - 3
    still_new = {c["name"] for c in listed(api, status="new")["concepts"]}
    assert still_new == {r["name"] for r in rows[3:]}
    _, again, _ = api("POST", BULK, body={"action": "reviewed", "rows": rows[:4]})  # three already were
    assert again["counts"] == {"unchanged": 3, "reviewed": 1} and again["review"]["new"] == len(rows) - 4
    assert listed(api, status="new")["total"] == len(rows) - 4
    _, other, _ = api("GET", f"{BASE}/review", claims=BIA)  # another operator's queue is untouched
    assert other["new"] == len(rows)


def test_a_bulk_delete_is_undone_in_one_action_and_a_missing_row_says_gone(api, store):
    names = ["troca-em-30-dias", "prazo-reembolso-pix"]
    status, body, _ = api("POST", BULK, body={"action": "delete", "rows": [{"name": n} for n in names + ["nao-existe"]]})
    assert status == 200 and not body["complete"]
    assert [r["outcome"] for r in body["rows"]] == ["deleted", "deleted", "gone"]
    assert not {c["name"] for c in listed(api)["concepts"]} & set(names)
    _, undone, _ = api("POST", BULK, body={"action": "undelete", "rows": [{"name": n} for n in names]})
    assert undone["complete"] and undone["counts"] == {"restored": 2}
    assert set(names) <= {c["name"] for c in listed(api)["concepts"]}
    assert store.get(T, A, "troca-em-30-dias").concept.name == "troca-em-30-dias"
    _, twice, _ = api("POST", BULK, body={"action": "undelete", "rows": [{"name": names[0]}]})
    assert twice["rows"] == [{"name": names[0], "outcome": "not_deleted"}] and not twice["complete"]


def test_a_change_of_type_writes_each_row_once_and_leaves_one_of_that_type_alone(api, store):
    names = [c["name"] for c in listed(api)["concepts"] if c["type"] != "objection"][:3]
    already = store.get(T, A, names[0])
    store.replace(T, A, already.concept.replace(type="objection"), if_match=already.etag, actor="operator:ana",
                  reason="edit")
    kept = len(store.versions(T, A, names[0]))
    status, body, _ = api("POST", BULK, body={"action": "type", "type": "objection", "rows": [{"name": n} for n in names]})
    assert status == 200 and body["complete"]
    assert [r["outcome"] for r in body["rows"]] == ["unchanged", "changed", "changed"]
    assert [store.get(T, A, name).concept.type for name in names] == ["objection"] * 3
    assert len(store.versions(T, A, names[0])) == kept  # no new version of the one already so


@pytest.mark.parametrize(("body", "code", "says"), [
    ({"action": "reviewed", "rows": [{"name": f"c-{i}", "written_at": "2026-11-20T10:00:00Z"} for i in range(501)]},
     "too_many_rows", "at most 500 rows per action (got 501)"),
    ({"action": "delete", "rows": []}, "invalid_bulk", "rows must name at least one concept"),
    ({"action": "delete", "rows": [{"name": "a"}, {"name": "a"}]}, "invalid_bulk", "'a' is named twice"),
    ({"action": "type", "rows": [{"name": "a"}]}, "invalid_bulk", "type must be one of fact, entity"),
    ({"action": "reviewed", "rows": [{"name": "a"}]}, "invalid_bulk", "rows[0].written_at must be"),
    ({"action": "delete", "type": "fact", "rows": [{"name": "a"}]}, "invalid_bulk", "type is only for the action type"),
    ({"action": "publish", "rows": [{"name": "a"}]}, "invalid_request", ""),
])
def test_a_request_the_page_would_not_send_is_refused_whole_and_clearly(api, store, body, code, says):
    before = len(store.list(T, A))
    status, answer, _ = api("POST", BULK, body=body)
    assert status == 422 and answer["error"]["code"] == code
    assert says in answer["error"]["message"]
    assert len(store.list(T, A)) == before


def test_an_unknown_agent_is_404_before_anything_is_done(api):
    status, body, _ = api("POST", f"/tenants/{T}/agents/nobody/concepts/bulk",
                          body={"action": "delete", "rows": [{"name": "troca-em-30-dias"}]})
    assert status == 404 and body["error"]["code"] == "unknown_agent"
