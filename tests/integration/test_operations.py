"""Operating it: the template's alarms watch exactly what the handlers emit, and the dashboard. (The
model API key, the lifecycle rules and `sam local invoke`'s env.json: test_template_settings.py.)"""

from __future__ import annotations

import json
import re
import uuid
from datetime import datetime, timedelta, timezone

import pytest
from helpers.handlers import LambdaContext, load_event, load_handler
from helpers.operations import RESOURCES, Emitted, alarms_watching, emitted, the, watched
from helpers.paths import DEMO

from knowledge.format.concept import parse
from knowledge_dev.scripted_model import server_error
from knowledge_dev.template import load_template

T, A = "default", "store-support"


@pytest.fixture
def metrics_on(monkeypatch):
    monkeypatch.delenv("POWERTOOLS_METRICS_DISABLED", raising=False)


# ------------------------------------------------------------------ failures through the handlers


def turn_event() -> dict:
    return load_event("turn-complete.json")


def test_a_model_outage_in_extraction_is_counted_where_the_turn_failed_alarm_looks(
        metrics_on, monkeypatch, extract_env, model, capsys):
    extract = load_handler("extract", monkeypatch, extract_env)
    model.responder = lambda request: server_error(503)
    answer = extract.lambda_handler(turn_event(), LambdaContext())
    assert answer["batchItemFailures"]
    failed = the("TurnFailed", capsys.readouterr().out)
    assert failed.dimensions == {"service": "knowledge-extract", "reason": "model_unavailable"}
    assert alarms_watching(failed) == ["TurnFailedAlarm"]


def test_an_unreadable_concept_fails_its_sighting_where_the_consolidation_alarm_looks(
        metrics_on, monkeypatch, s3, bucket, sessions_bucket, bus, model, capsys):
    from helpers.concepts import make_concept

    from knowledge.format.sighting import Sighting
    from knowledge.store.keys import concept_key

    s3.put_object(Bucket=bucket, Key=concept_key(T, A, "frete-gratis"), Body=b"---\nname: [1, 2]\n---\nbody\n")
    consolidate = load_handler("consolidate", monkeypatch, dict(
        KNOWLEDGE_BUCKET=bucket, SESSIONS_BUCKET=sessions_bucket, EVENT_BUS_NAME=bus["name"],
        UTILITY_MODEL="openai:judge", OPENAI_BASE_URL=model.base_url))
    sighting = Sighting.of(T, A, "sess_1", "t1", make_concept("frete-gratis", sources=("sess_1",)))
    record = load_event("candidate.json")["Records"][0]
    record.update(body=sighting.body(), messageId="m0")
    record["attributes"].update(MessageGroupId=sighting.group_id(), MessageDeduplicationId=sighting.dedup_id())
    answer = consolidate.lambda_handler({"Records": [record]}, LambdaContext())
    assert answer == {"batchItemFailures": [{"itemIdentifier": "m0"}]}
    failed = the("ConsolidationFailed", capsys.readouterr().out)
    assert failed.dimensions["service"] == "knowledge-consolidate" and set(failed.dimensions) == {"service", "reason"}
    assert alarms_watching(failed) == ["ConsolidationFailedAlarm"]


@pytest.fixture
def demo_agent(store):
    store.put_config(T, A, (DEMO / "knowledge.yaml").read_text(), actor="operator:demo")
    for path in sorted(DEMO.glob("*.md")):
        store.create(T, A, parse(path.read_text()), actor="engine")
    return store


def retrieve_handler(monkeypatch, bucket, bus_name, **env):
    return load_handler("retrieve", monkeypatch, dict(KNOWLEDGE_BUCKET=bucket, EVENT_BUS_NAME=bus_name),
                        POWERTOOLS_SERVICE_NAME=f"knowledge-retrieve-{uuid.uuid4().hex[:6]}", **env)


def test_retrievals_failures_are_each_counted_where_an_alarm_looks(metrics_on, monkeypatch, demo_agent, s3, bucket,
                                                                  capsys):
    from knowledge.recall import warm
    from knowledge.store.keys import concept_key

    # A document that does not parse, a bus that does not exist, and a budget too short for the agent.
    s3.put_object(Bucket=bucket, Key=concept_key(T, A, "troca-quebrada"), Body=b"---\ntype: [\n---\n")
    monkeypatch.setattr(warm, "FETCH_CHUNK", 1)
    retrieve = retrieve_handler(monkeypatch, bucket, "no-such-bus", KNOWLEDGE_REFRESH_SECONDS="0",
                                KNOWLEDGE_FETCH_BUDGET_SECONDS="0.001")
    for _ in range(10):  # caught up a concept per call, the broken one among them
        retrieve.lambda_handler(load_event("retrieve.json"), LambdaContext())
    output = capsys.readouterr().out
    assert watched(output, "IndexIncomplete") == {"IndexIncompleteAlarm"}
    assert alarms_watching(the("ConceptUnreadable", output)) == ["ConceptUnreadableAlarm"]

    loaded = retrieve.lambda_handler(load_event("load-knowledge.json"), LambdaContext())
    assert loaded["name"] == "cep-sudeste-cd-campinas"
    assert alarms_watching(the("EventPublishFailed", capsys.readouterr().out)) == ["RetrieveEventPublishFailedAlarm"]


class ShortContext(LambdaContext):
    def get_remaining_time_in_millis(self) -> int:
        return 4_000


def test_with_s3_down_retrieval_serves_what_it_holds_where_the_stale_alarm_looks(metrics_on, monkeypatch, demo_agent,
                                                                                 bucket, bus, moto_endpoint, capsys):
    from knowledge_dev.faults import FaultMix, FaultProxy
    from shared.aws import client

    with FaultProxy(moto_endpoint, seed=3) as proxy:
        # The handler's S3 client goes through the proxy (clients are cached per process: rebuilt here and after).
        monkeypatch.setenv("AWS_ENDPOINT_URL", proxy.url)
        client.cache_clear()
        try:
            retrieve = retrieve_handler(monkeypatch, bucket, bus["name"], KNOWLEDGE_REFRESH_SECONDS="0")
            warm = retrieve.lambda_handler(load_event("retrieve.json"), ShortContext())
            proxy.mix = FaultMix(internal=1.0)
            assert retrieve.lambda_handler(load_event("retrieve.json"), ShortContext())["block"] == warm["block"]
        finally:
            monkeypatch.setenv("AWS_ENDPOINT_URL", moto_endpoint)
            client.cache_clear()
    stale = the("ServedStale", capsys.readouterr().out)
    assert stale.dimensions == {"service": "knowledge-retrieve", "reason": "store_unavailable"}
    assert alarms_watching(stale) == ["ServedStaleAlarm"]


DISTILL_CONFIG = "knowledge:\n  extract: false\ndistill:\n  idle_hours: 6\n  min_messages: 3\n"


def idle_conversation(s3, sessions_bucket, session: str) -> None:
    from facts.sessions import record_turn
    from knowledge.format.turn import Turn
    from knowledge.store.archive import TurnArchive

    start = datetime.now(timezone.utc) - timedelta(hours=8)
    exchanges = [[("user", "oi, quero trocar o tenis do pedido 48213, calço 42"), ("assistant", "Claro! Pelo 43?")],
                 [("user", "pode ser 43. e prefiro pagar no pix sempre"), ("assistant", "Anotado: Pix.")]]
    for index, messages in enumerate(exchanges):
        turn = Turn(tenant=T, agent=A, session_id=session, turn_id=f"turn_{index:04d}",
                    completed_at=start + timedelta(minutes=2 * index), customer_id="cust-8842-ana",
                    messages=[{"role": role, "content": text} for role, text in messages])
        TurnArchive(s3, sessions_bucket).put(turn)
        record_turn(s3, sessions_bucket, turn)


@pytest.fixture
def distill_env(s3, bucket, sessions_bucket, model):
    s3.put_object(Bucket=bucket, Key=f"agents/{T}/{A}/knowledge.yaml", Body=DISTILL_CONFIG.encode())
    idle_conversation(s3, sessions_bucket, "sess_troca_01")
    return dict(KNOWLEDGE_BUCKET=bucket, SESSIONS_BUCKET=sessions_bucket, EVENT_BUS_NAME="no-such-bus",
                UTILITY_MODEL="openai:distiller", OPENAI_BASE_URL=model.base_url, FACTS_KEY="k" * 48)


def test_distillations_failures_are_each_counted_where_an_alarm_looks(metrics_on, monkeypatch, distill_env, model,
                                                                     capsys):
    distill = load_handler("distill", monkeypatch, distill_env)
    model.responder = lambda request: server_error(503)
    for _ in range(3):  # facts.distill.MODEL_ATTEMPTS passes, then the session is given up
        distill.lambda_handler(load_event("distill.json"), LambdaContext())
    output = capsys.readouterr().out
    assert len([point for point in emitted(output) if point.metric == "DistillModelFailed"]) == 3
    assert watched(output, "DistillModelFailed") == {"DistillModelFailedAlarm"}
    assert alarms_watching(the("SessionGivenUp", output)) == ["SessionGivenUpAlarm"]


def test_a_facts_event_the_bus_refuses_is_counted_where_an_alarm_looks(metrics_on, monkeypatch, distill_env, model,
                                                                      capsys):
    distill = load_handler("distill", monkeypatch, distill_env)
    model.responder = lambda request: json.dumps([{"name": "pagamento_preferido", "value": "Pix", "evidence": [2]}])
    assert distill.lambda_handler(load_event("distill.json"), LambdaContext())["ok"]
    refused = the("EventPublishFailed", capsys.readouterr().out)
    assert refused.dimensions == {"service": "facts-distill", "event": "fact_proposed"}
    assert alarms_watching(refused) == ["FactsEventPublishFailedAlarm"]


# ------------------------------------------------------------------ the template's alarms and dashboard


def alarms() -> dict[str, dict]:
    return {lid: r["Properties"] for lid, r in RESOURCES.items() if r["Type"] == "AWS::CloudWatch::Alarm"}


def dimension_refs(alarm: dict) -> set[str]:
    refs = set()
    for dimension in alarm.get("Dimensions", []):
        value = dimension["Value"]
        refs.add(value.get("Ref") or value.get("Fn::GetAtt", [None])[0])
    return refs


def test_every_function_has_an_errors_and_a_throttles_alarm():
    functions = {lid for lid, r in RESOURCES.items() if r["Type"] == "AWS::Serverless::Function"}
    for metric in ("Errors", "Throttles"):
        watched = set().union(*(dimension_refs(a) for a in alarms().values()
                                if a.get("Namespace") == "AWS/Lambda" and a.get("MetricName") == metric))
        assert watched == functions, metric


def test_every_queue_has_an_age_alarm_and_every_dead_letter_queue_a_messages_alarm():
    queues = {lid for lid, r in RESOURCES.items() if r["Type"] == "AWS::SQS::Queue"}
    dead_letter = {r["Properties"]["RedrivePolicy"]["deadLetterTargetArn"]["Fn::GetAtt"][0]
                   for r in RESOURCES.values() if r["Type"] == "AWS::SQS::Queue" and "RedrivePolicy" in r["Properties"]}
    by_metric: dict[str, set] = {}
    for alarm in alarms().values():
        by_metric.setdefault(alarm.get("MetricName"), set()).update(dimension_refs(alarm))
    assert by_metric["ApproximateAgeOfOldestMessage"] == queues
    assert by_metric["ApproximateNumberOfMessagesVisible"] == dead_letter == {"TurnCompleteDLQ", "CandidatesDLQ", "PolicyReviewDLQ"}


def test_every_alarm_notifies_the_topic_and_says_when_it_clears():
    topic = {"Fn::If": ["CreateAlarmTopic", {"Ref": "AlarmTopic"}, {"Ref": "AlarmTopicArn"}]}
    for logical_id, alarm in alarms().items():
        assert alarm["AlarmActions"] == [topic] and alarm["OKActions"] == [topic], logical_id
        assert alarm["TreatMissingData"] == "notBreaching", logical_id


def dashboard_body() -> dict:
    text = RESOURCES["OperationsDashboard"]["Properties"]["DashboardBody"]["Fn::Sub"]
    text = re.sub(r"\$\{!", "${", re.sub(r"\$\{(?!!)([^}]+)\}", lambda m: f"value-of-{m[1]}", text))
    return json.loads(text)


def test_the_dashboard_shows_every_alarm_and_counts_load_knowledge_per_conversation_from_retrieves_logs():
    widgets = dashboard_body()["widgets"]
    (status,) = [w for w in widgets if w["type"] == "alarm"]
    assert sorted(status["properties"]["alarms"]) == sorted(f"value-of-{lid}.Arn" for lid in alarms())
    (logs,) = [w for w in widgets if w["type"] == "log"]
    assert logs["properties"]["query"].startswith("SOURCE 'value-of-RetrieveLogGroup' |")
    assert "by tenant, agent, session_id" in logs["properties"]["query"]
    titles = " / ".join(w["properties"].get("title", "") for w in widgets)
    for shown in ("Turns in", "Candidates accepted and rejected", "verdicts", "Conflicts", "Retrieval latency",
                  "Blocks injected vs empty"):
        assert shown in titles


def test_each_load_knowledge_is_logged_with_the_ids_the_dashboards_per_conversation_widget_reads(
        monkeypatch, demo_agent, bucket, bus, capsys):
    handler = retrieve_handler(monkeypatch, bucket, bus["name"])
    handler.lambda_handler(load_event("load-knowledge.json"), LambdaContext())
    [line] = [json.loads(text) for text in capsys.readouterr().out.splitlines() if '"knowledge loaded"' in text]
    assert {key: line[key] for key in ("tenant", "agent", "session_id", "concept")} == {
        "tenant": "default", "agent": "store-support", "session_id": "sess_demo_02", "concept": "cep-sudeste-cd-campinas"}
    assert "13000-13999" not in json.dumps(line)  # identifiers only, never the concept
    widget = json.dumps(load_template()["Resources"]["OperationsDashboard"])
    assert "knowledge loaded" in widget and "session_id" in widget


def test_a_turn_deferred_by_the_daily_cap_is_counted_but_alarms_nothing():
    deferred = Emitted("Knowledge", "TurnFailed", {"service": "knowledge-extract", "reason": "daily_cap_reached"}, 1.0)
    failed = Emitted("Knowledge", "TurnFailed", {"service": "knowledge-extract", "reason": "model_timeout"}, 1.0)
    assert alarms_watching(deferred) == [] and alarms_watching(failed) == ["TurnFailedAlarm"]
