"""Shared fixtures: a real moto server on 127.0.0.1 for the whole test session."""

from __future__ import annotations

import json
import os
import shutil
import uuid
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import boto3
import pytest

from knowledge_dev.local_aws import moto_server

ROOT = Path(__file__).resolve().parents[1]
EVENTS = ROOT / "events"
DEMO = ROOT / "devstack" / "knowledge_dev" / "demo"


def skip_unless_present(needed: dict[str, bool]):
    """A module's skip mark for parts this machine may lack (a browser, the built page); under
    CI (.ci/run sets CI) a missing part is an error instead, so nothing is skipped there."""
    missing = [what for what, present in needed.items() if not present]
    if missing and os.environ.get("CI"):
        raise RuntimeError(f"these tests need {' and '.join(missing)}")
    return pytest.mark.skipif(bool(missing), reason=f"needs {' and '.join(missing)}")


@pytest.fixture(scope="session", autouse=True)
def moto_endpoint():
    """moto's server, spoken to over HTTP by the same boto3 code that runs in Lambda."""
    with moto_server("test") as endpoint:
        yield endpoint


@pytest.fixture(scope="session")
def s3(moto_endpoint):
    return boto3.client("s3", endpoint_url=moto_endpoint, region_name="us-east-1")


def new_bucket(s3, versioned: bool = True) -> str:
    name = f"test-{uuid.uuid4().hex[:20]}"
    s3.create_bucket(Bucket=name)
    if versioned:
        s3.put_bucket_versioning(Bucket=name, VersioningConfiguration={"Status": "Enabled"})
    return name


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


def make_concept(name: str = "frete-gratis", **overrides):
    from knowledge.format.concept import Concept

    fields = dict(
        name=name,
        description="Free shipping above R$199.",
        type="fact",
        provenance="observed",
        confidence=0.6,
        sources=("sess_1",),
        occurrences=1,
        created_at=datetime(2026, 8, 24, 18, 2, 11, tzinfo=timezone.utc),
        updated_at=datetime(2026, 8, 24, 18, 2, 11, tzinfo=timezone.utc),
        body="Orders above R$199 ship free.",
    )
    fields.update(overrides)
    return Concept(**fields)


def load_event(name: str) -> dict:
    return json.loads((EVENTS / name).read_text())


@dataclass
class LambdaContext:
    function_name: str = "test-function"
    memory_limit_in_mb: int = 512
    invoked_function_arn: str = "arn:aws:lambda:us-east-1:123456789012:function:test-function"
    aws_request_id: str = "00000000-0000-0000-0000-000000000000"

    def get_remaining_time_in_millis(self) -> int:
        return 900_000


def load_handler(function: str, monkeypatch, **env: str):
    """Import functions/<function>/app.py afresh, with `env` set, as Lambda would at cold start."""
    from knowledge_dev.handlers import load_handler as load_real_handler

    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return load_real_handler(function, module_name=f"handler_{function}_{uuid.uuid4().hex[:8]}",
                             template_settings=False)


@pytest.fixture(scope="session")
def sqs(moto_endpoint):
    return boto3.client("sqs", endpoint_url=moto_endpoint, region_name="us-east-1")


def new_queue(sqs, fifo: bool = False, **attributes: str) -> str:
    name = f"test-{uuid.uuid4().hex[:16]}" + (".fifo" if fifo else "")
    attrs = {"FifoQueue": "true", "ContentBasedDeduplication": "false"} if fifo else {}
    attrs.update(attributes)
    return sqs.create_queue(QueueName=name, Attributes=attrs)["QueueUrl"]


@pytest.fixture
def candidates_queue(sqs) -> str:
    return new_queue(sqs, fifo=True)


def drain(sqs, queue_url: str) -> list[dict]:
    """Every message on a queue (received and deleted)."""
    out = []
    while True:
        answer = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=0,
                                     AttributeNames=["All"])
        messages = answer.get("Messages", [])
        if not messages:
            return out
        out.extend(messages)
        sqs.delete_message_batch(QueueUrl=queue_url, Entries=[
            {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(messages)])


class Script:
    """What the scripted model answers: a list of replies consumed in order, then `default`."""

    def __init__(self):
        self.replies: list = []
        self.default = "[]"

    def __call__(self, request):
        return self.replies.pop(0) if self.replies else self.default


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


class Clock:
    """A clock the test moves by hand (a warm index's refresh window, a deadline)."""

    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


class Events:
    """The Events port, keeping what was published."""

    def __init__(self):
        self.published = []

    def publish(self, detail_type, detail):
        self.published.append((detail_type, detail))


@pytest.fixture
def counted(moto_endpoint, bucket):
    """The demo agent in a store whose S3 requests are counted (from after the seeding)."""
    from collections import Counter

    from knowledge.format.concept import parse
    from knowledge.store.concepts import ConceptStore

    s3 = boto3.client("s3", endpoint_url=moto_endpoint, region_name="us-east-1")
    calls = Counter()
    s3.meta.events.register("before-send.s3", lambda **kwargs: calls.update(["s3"]))
    store = ConceptStore(s3, bucket)
    store.put_config("default", "store-support", (DEMO / "knowledge.yaml").read_text(), actor="operator:demo")
    for path in sorted(DEMO.glob("*.md")):
        store.create("default", "store-support", parse(path.read_text()), actor="engine")
    calls.clear()
    return store, calls


# Debian's Chromium: browsers cannot be downloaded here, so Playwright drives the system one.
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


@pytest.fixture(scope="module")
def browser():
    """One headless Chromium per test module (the studio's and the Facts page's browser tests)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=[
            "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
            "--disable-component-update", "--disable-sync"])
        yield chromium
        chromium.close()


ARTIFACTS = ROOT / "test-artifacts"


@contextmanager
def signed_in_page(browser, url: str, ready: str, screenshot: str):
    """A studio page at `url`, signed in through the local stand-in for Cognito (authorization
    code + PKCE) and showing `ready`; any page error or CSP violation fails the test, and a
    screenshot is kept in test-artifacts/."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("console", lambda message: errors.append(message.text) if "Content Security Policy" in message.text else None)
    page.goto(url)
    page.click("#signin-link")
    page.wait_for_selector(ready)
    yield page
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / screenshot), full_page=True)
    context.close()
    assert errors == [], errors


def expect(locator):
    from playwright.sync_api import expect as playwright_expect

    return playwright_expect(locator)
