"""Fixtures the unit tier shares (the ones every tier uses are in tests/conftest.py)."""

from __future__ import annotations

import boto3
import pytest
from helpers.paths import DEMO


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
