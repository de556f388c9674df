"""Fixtures every tier shares: a real moto server on 127.0.0.1, started by the first test that needs
it and kept for the rest of the session, buckets, queues and an event bus on it, the concept store,
and the scripted model server.

Helpers that are not fixtures are in tests/helpers/ (`from helpers.handlers import load_handler`);
fixtures only one tier uses are in that tier's conftest.py (unit/, integration/, e2e/).
"""

from __future__ import annotations

import json
import os
import uuid

import boto3
import pytest

# A helper's failed assert shows its values, as a test's does (only modules imported after this are rewritten).
pytest.register_assert_rewrite("helpers")

from helpers.aws import new_bucket, new_queue  # noqa: E402
from helpers.fakes import Script  # noqa: E402

from knowledge_dev.local_aws import moto_server  # noqa: E402


# Until a test asks for moto, boto3 has dummy credentials and an endpoint where nothing listens: a test
# that reached for AWS without asking for moto fails (nothing answers), and never reaches a real account.
OFFLINE = {"AWS_ENDPOINT_URL": "http://127.0.0.1:1", "AWS_ACCESS_KEY_ID": "offline",
           "AWS_SECRET_ACCESS_KEY": "offline", "AWS_DEFAULT_REGION": "us-east-1"}


@pytest.fixture(scope="session", autouse=True)
def no_real_aws():
    """For the whole session: OFFLINE until moto_endpoint starts, then moto's endpoint (it sets its own)."""
    from shared.aws import client

    saved = {key: os.environ.get(key) for key in OFFLINE}
    os.environ.update(OFFLINE)
    client.cache_clear()
    yield
    client.cache_clear()
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@pytest.fixture(scope="session")
def moto_endpoint(no_real_aws):
    """moto's server, spoken to over HTTP by the same boto3 code that runs in Lambda. Started by the
    first test that needs it (through s3, sqs, bus, store... or by name); from then on, for the rest
    of the session, AWS_ENDPOINT_URL and dummy credentials point every boto3 client at it."""
    with moto_server("test") as endpoint:
        yield endpoint


@pytest.fixture(scope="session")
def s3(moto_endpoint):
    return boto3.client("s3", endpoint_url=moto_endpoint, region_name="us-east-1")


@pytest.fixture
def bucket(s3) -> str:
    return new_bucket(s3)


@pytest.fixture
def sessions_bucket(s3) -> str:
    return new_bucket(s3, versioned=False)


@pytest.fixture
def store(s3, bucket):
    from knowledge.store.concepts import ConceptStore

    return ConceptStore(s3, bucket)


@pytest.fixture(scope="session")
def sqs(moto_endpoint):
    return boto3.client("sqs", endpoint_url=moto_endpoint, region_name="us-east-1")


@pytest.fixture
def candidates_queue(sqs) -> str:
    return new_queue(sqs, fifo=True)


@pytest.fixture
def script():
    return Script()


@pytest.fixture
def model(script):
    from knowledge_dev.scripted_model import ScriptedModel

    with ScriptedModel(script) as server:
        yield server


@pytest.fixture
def bus(moto_endpoint, sqs):
    """An event bus whose every `knowledge` event lands on a queue the test can read."""
    events = boto3.client("events", endpoint_url=moto_endpoint, region_name="us-east-1")
    name = f"bus-{uuid.uuid4().hex[:8]}"
    events.create_event_bus(Name=name)
    queue = new_queue(sqs)
    arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    events.put_rule(Name="all", EventBusName=name, EventPattern=json.dumps({"source": ["knowledge"]}))
    events.put_targets(Rule="all", EventBusName=name, Targets=[{"Id": "q", "Arn": arn}])
    return {"name": name, "queue": queue}


@pytest.fixture
def facts_stack(s3, bucket, sessions_bucket, bus, model) -> dict[str, str]:
    """The Facts demo agent (distilling, learning nothing) and the stand-ins for the stack its
    handlers run on, keyed by the variable that names each: `load_handler(name, monkeypatch,
    facts_stack)` gives a function what template.yaml gives it from these."""
    from helpers.facts_page import A, CONFIG, KEY, T

    s3.put_object(Bucket=bucket, Key=f"agents/{T}/{A}/knowledge.yaml", Body=CONFIG.encode())
    return dict(KNOWLEDGE_BUCKET=bucket, SESSIONS_BUCKET=sessions_bucket, EVENT_BUS_NAME=bus["name"],
                UTILITY_MODEL="openai:distiller", OPENAI_BASE_URL=model.base_url, FACTS_KEY=KEY,
                STUDIO_ORIGIN="http://127.0.0.1:8080")
