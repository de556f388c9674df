"""The studio API's OpenAPI document is the oracle: schemathesis generates requests from it, sends
them through the local adapter (authorizer and real handler, on moto's S3) and checks every answer
against it: no 5xx, and no status, content type or body the document does not describe."""

from __future__ import annotations

import json
import uuid

import pytest
from helpers.handlers import LambdaContext, load_handler
from helpers.paths import DEMO, ROOT

from knowledge.format.concept import parse

T, A = "default", "store-support"
EXAMPLES = 25  # per operation and per way of choosing the path: the whole run stays well under two minutes


@pytest.fixture
def studio(monkeypatch, store, bucket, sessions_bucket, sqs):
    from helpers.aws import new_queue
    from knowledge_dev.studio_server import LocalAuthorizer, StudioServer

    store.put_config(T, A, (DEMO / "knowledge.yaml").read_text(), actor="operator:demo")
    for path in sorted(DEMO.glob("*.md")):
        store.create(T, A, parse(path.read_text()), actor="engine")
    store.delete(T, A, "objecao-frete-caro", actor="operator:demo")
    handler = load_handler("studio_api", monkeypatch, dict(
        KNOWLEDGE_BUCKET=bucket, SESSIONS_BUCKET=sessions_bucket, STUDIO_ORIGIN="http://127.0.0.1:8080",
        POLICY_REVIEW_QUEUE_URL=new_queue(sqs)), POWERTOOLS_SERVICE_NAME=f"studio-{uuid.uuid4().hex[:6]}",
        POWERTOOLS_LOG_LEVEL="ERROR")  # saves' jobs, Teach words
    authorizer = LocalAuthorizer(issuer="http://127.0.0.1/dev")
    server = StudioServer(handler.lambda_handler, authorizer, context_factory=LambdaContext).start()
    yield server, authorizer.token()
    server.stop()


def operations():
    import schemathesis
    from schemathesis.config import SchemathesisConfig

    # A schema-valid request may still be refused for what JSON Schema cannot say: a concept or
    # knowledge.yaml that breaks its format (422), a stale or missing If-Match (412, 428), a name
    # taken (409). Each of those is documented; a 400 or a 5xx for valid data is not accepted.
    config = SchemathesisConfig.from_dict({"checks": {"positive_data_acceptance": {
        "expected-statuses": ["2XX", "401", "403", "404", "409", "412", "422", "428"]}}})
    schema = schemathesis.openapi.from_dict(json.loads((ROOT / "studio_web" / "openapi.json").read_text()),
                                            config=config)
    return [result.ok() for result in schema.get_all_operations()]


@pytest.mark.parametrize("operation", operations(), ids=lambda op: op.label)
def test_every_answer_is_one_the_document_describes(studio, operation):
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    server, token = studio
    # Half the cases on the seeded agent (and its concepts), so requests reach past the name checks.
    seeded = {"tenant": T, "agent": A}
    if "{name}" in operation.path:
        seeded["name"] = "troca-em-30-dias" if "/deleted/" not in operation.path else "objecao-frete-caro"
    cases = st.one_of(operation.as_strategy(path_parameters=seeded), operation.as_strategy())

    @given(case=cases)
    @settings(max_examples=EXAMPLES, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    def answers_as_documented(case):
        case.call_and_validate(base_url=f"{server.url}/api", headers={"Authorization": f"Bearer {token}"})

    answers_as_documented()
