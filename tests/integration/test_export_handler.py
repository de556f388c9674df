"""ExportFunction driven by the same events/ that `sam local invoke` uses."""

from __future__ import annotations

import networkx as nx
import pytest
from helpers.handlers import LambdaContext, load_event, load_handler
from helpers.paths import DEMO

from knowledge.format.concept import parse


@pytest.fixture
def handler(monkeypatch, store, bucket, sessions_bucket):
    for path in sorted(DEMO.glob("*.md")):
        store.create("default", "store-support", parse(path.read_text(encoding="utf-8")), actor="engine")
    return load_handler("export", monkeypatch, dict(KNOWLEDGE_BUCKET=bucket, SESSIONS_BUCKET=sessions_bucket),
                        POWERTOOLS_SERVICE_NAME="knowledge-export")


def test_export_event_writes_every_concept_under_the_named_prefix(handler, s3, sessions_bucket):
    answer = handler.lambda_handler(load_event("export.json"), LambdaContext())
    assert answer["ok"] is True and answer["prefix"] == "default/store-support/exports/demo/"
    for path in DEMO.glob("*.md"):
        body = s3.get_object(Bucket=sessions_bucket, Key=answer["prefix"] + path.name)["Body"].read()
        assert body == path.read_bytes()
    assert answer["concepts"] == len(list(DEMO.glob("*.md")))


def test_graphml_event_writes_one_graph(handler, s3, sessions_bucket, tmp_path):
    answer = handler.lambda_handler(load_event("export-graphml.json"), LambdaContext())
    key = answer["prefix"] + "knowledge.graphml"
    (tmp_path / "k.graphml").write_bytes(s3.get_object(Bucket=sessions_bucket, Key=key)["Body"].read())
    assert len(nx.read_graphml(tmp_path / "k.graphml").nodes) == answer["concepts"]


def test_without_a_label_the_prefix_is_a_timestamp(handler):
    answer = handler.lambda_handler({"agent": "store-support"}, LambdaContext())
    assert answer["ok"] and answer["prefix"].startswith("default/store-support/exports/")
    assert ":" not in answer["prefix"]


def test_a_shared_event_exports_the_tenants_shared_concepts_beside_no_agents(handler, store, s3, sessions_bucket):
    from knowledge.store.keys import SHARED

    shared = parse((DEMO / "troca-em-30-dias.md").read_text(encoding="utf-8"))
    store.create("default", SHARED, shared, actor="operator:ana")
    answer = handler.lambda_handler({"shared": True, "label": "politicas"}, LambdaContext())
    assert answer["ok"] and answer["prefix"] == "default/_shared/exports/politicas/" and answer["concepts"] == 1
    listed = s3.list_objects_v2(Bucket=sessions_bucket, Prefix=answer["prefix"])["Contents"]
    assert [item["Key"] for item in listed] == [answer["prefix"] + "troca-em-30-dias.md"]


@pytest.mark.parametrize("event, code, fragment", [
    ({"agent": "../x"}, "knowledge_error", "agent: must be lowercase"),
    ({"agent": "store-support", "label": "../../escape"}, "knowledge_error", "label"),
    ({"agent": "store-support", "format": "pdf"}, "knowledge_error", "format"),
    ({"agent": "store-support", "bucket": "elsewhere"}, "knowledge_error", "bucket: unknown key"),
    ({}, "knowledge_error", "name an agent (\"agent\") or the tenant's shared concepts"),
    ({"agent": "store-support", "shared": True}, "knowledge_error", "not both"),
    ("not an object", "knowledge_error", "JSON object"),
    ({"agent": "nobody"}, "unknown_agent", "has no knowledge store"),
])
def test_bad_events_get_a_clear_error_answer(handler, event, code, fragment):
    answer = handler.lambda_handler(event, LambdaContext())
    assert answer["ok"] is False and answer["error"]["code"] == code
    assert fragment in answer["error"]["message"]


@pytest.mark.parametrize("event_file", ["export.json", "export-graphml.json"])
def test_an_unreadable_concept_is_skipped_and_reported_and_the_rest_exported(handler, s3, bucket, sessions_bucket,
                                                                             event_file):
    from knowledge.store.keys import concept_key

    nested = (DEMO / "troca-em-30-dias.md").read_text().replace("sources: []", 'sources: [["sess_1"], {a: b}]')
    s3.put_object(Bucket=bucket, Key=concept_key("default", "store-support", "fontes-aninhadas"), Body=nested.encode())
    answer = handler.lambda_handler(load_event(event_file), LambdaContext())
    assert answer["ok"] is True and list(answer["skipped"]) == ["fontes-aninhadas"]
    assert "sources" in answer["skipped"]["fontes-aninhadas"]
    assert answer["concepts"] == len(list(DEMO.glob("*.md")))
    listed = s3.list_objects_v2(Bucket=sessions_bucket, Prefix=answer["prefix"]).get("Contents", [])
    assert not any("fontes-aninhadas" in item["Key"] for item in listed)


def test_the_export_says_the_pairs_waiting_for_a_judgment_are_not_exported(handler, store, s3, sessions_bucket):
    from knowledge.store.waiting import WaitingPair

    store.waiting().put("default", "store-support", WaitingPair(
        concept="troca-em-30-dias", kind="policy", why="no_model", since="2026-12-01", policy="frete-gratis-acima-199"))
    answer = handler.lambda_handler(load_event("export.json"), LambdaContext())
    assert answer["ok"] is True and answer["waiting"] == 1
    listed = s3.list_objects_v2(Bucket=sessions_bucket, Prefix=answer["prefix"])["Contents"]
    assert all(item["Key"].endswith(".md") for item in listed)  # concepts only: no pair written out
