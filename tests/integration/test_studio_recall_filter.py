"""The studio list through its handler shows what retrieval leaves out: each row's recall
(expired, not_started, stale), a filter for each, and an operator's save bringing a stale
concept back."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from helpers.concepts import make_concept
from helpers.paths import DEMO
from helpers.studio import A, BASE, T, seen_recently

CONFIG = (DEMO / "knowledge.yaml").read_text().replace("stale_after_days: 3650", "stale_after_days: 180")


def local_today():
    return (datetime.now(timezone.utc) - timedelta(hours=3)).date()


def configure(store, text: str) -> None:
    store.put_config(T, A, text, actor="operator:demo", if_match=store.get_config(T, A).etag)


def dated(api, store) -> None:
    configure(store, CONFIG)
    now = datetime.now(timezone.utc).replace(microsecond=0)
    old = now - timedelta(days=200)
    seen_recently(store)  # the demo's observed concepts: a month ago, whatever year the suite runs in
    store.create(T, A, make_concept("frete-gratis-natal", created_at=now, updated_at=now,
                                    valid_until=local_today() - timedelta(days=1)), actor="engine")
    store.create(T, A, make_concept("cupom-verao", created_at=now, updated_at=now,
                                    valid_from=local_today() + timedelta(days=3)), actor="engine")
    store.create(T, A, make_concept("entrega-manaus", created_at=old, updated_at=old), actor="engine")
    store.create(T, A, make_concept("regra-antiga", created_at=old, updated_at=old, provenance="policy"),
                 actor="operator:demo")


def names(api, **query) -> list[str]:
    status, body, _ = api("GET", f"{BASE}/concepts", query={"sort": "name", "order": "asc", **query})
    assert status == 200
    return [row["name"] for row in body["concepts"]]


def test_each_row_says_why_it_is_out_of_recall_and_each_reason_is_a_filter(api, store):
    dated(api, store)
    _, body, _ = api("GET", f"{BASE}/concepts", query={"sort": "name", "order": "asc"})
    rows = {row["name"]: row for row in body["concepts"]}
    assert rows["frete-gratis-natal"]["recall"] == "expired"
    assert rows["frete-gratis-natal"]["valid_until"] == (local_today() - timedelta(days=1)).isoformat()
    assert rows["cupom-verao"]["recall"] == "not_started"
    assert rows["entrega-manaus"]["recall"] == "stale"
    assert rows["regra-antiga"]["recall"] is None  # a policy never goes stale
    assert rows["cep-sudeste-cd-campinas"]["recall"] is None
    assert names(api, status="expired") == ["frete-gratis-natal"]
    assert names(api, status="not_started") == ["cupom-verao"]
    assert names(api, status="stale") == ["entrega-manaus"]
    status, body, _ = api("GET", f"{BASE}/concepts", query={"status": "gone"})
    assert status == 422


def test_an_operator_s_save_brings_a_stale_concept_back(api, store):
    dated(api, store)
    status, concept, _ = api("GET", f"{BASE}/concepts/entrega-manaus")
    edited = concept["markdown"].replace("Orders above R$199 ship free.", "Orders above R$199 ship free, checked.")
    status, _, _ = api("PUT", f"{BASE}/concepts/entrega-manaus", body={"markdown": edited},
                       headers={"if-match": concept["etag"]})
    assert status == 200
    assert names(api, status="stale") == []


def test_the_stale_days_follow_the_agent_s_knowledge_yaml(api, store):
    dated(api, store)
    assert names(api, status="stale") == ["entrega-manaus"]
    configure(store, CONFIG.replace("stale_after_days: 180", "stale_after_days: 365"))
    assert names(api, status="stale") == []


def test_an_operator_sets_or_clears_the_end_like_any_line(api, store):
    dated(api, store)
    status, concept, _ = api("GET", f"{BASE}/concepts/cep-sudeste-cd-campinas")
    yesterday = (local_today() - timedelta(days=1)).isoformat()
    ended = concept["markdown"].replace("\n---\n", f"\nvalid_until: {yesterday}\n---\n", 1)
    status, saved, _ = api("PUT", f"{BASE}/concepts/cep-sudeste-cd-campinas", body={"markdown": ended},
                           headers={"if-match": concept["etag"]})
    assert status == 200
    assert "cep-sudeste-cd-campinas" in names(api, status="expired")
    wrong = ended.replace(f"valid_until: {yesterday}", "valid_until: 31/12/2026")
    status, body, _ = api("PUT", f"{BASE}/concepts/cep-sudeste-cd-campinas", body={"markdown": wrong},
                          headers={"if-match": saved["etag"]})
    assert status == 422 and body["errors"][0]["field"] == "valid_until"
    assert "must be a date like 2026-11-30" in body["errors"][0]["message"]
    cleared = ended.replace(f"valid_until: {yesterday}\n", "")
    status, _, _ = api("PUT", f"{BASE}/concepts/cep-sudeste-cd-campinas", body={"markdown": cleared},
                       headers={"if-match": saved["etag"]})
    assert status == 200 and "cep-sudeste-cd-campinas" not in names(api, status="expired")
