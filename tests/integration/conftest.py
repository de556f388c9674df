"""Fixtures the integration tier shares (the ones every tier uses are in tests/conftest.py)."""

from __future__ import annotations

import json

import pytest
from helpers.paths import DEMO
from helpers.studio import demo_studio

from knowledge_dev.scripted_model import rules_responder

T, A = "default", "store-support"
DEMO_RULES = json.loads((DEMO / "model_script.json").read_text())["rules"]


@pytest.fixture
def api(monkeypatch, store, bucket, sessions_bucket):
    return demo_studio(monkeypatch, store, bucket, sessions_bucket)


@pytest.fixture
def extract_env(store, bucket, sessions_bucket, candidates_queue, model):
    store.put_config(T, A, (DEMO / "knowledge.yaml").read_text(), actor="operator:demo")
    model.responder = rules_responder(DEMO_RULES)
    return dict(KNOWLEDGE_BUCKET=bucket, SESSIONS_BUCKET=sessions_bucket, CANDIDATES_QUEUE_URL=candidates_queue,
                UTILITY_MODEL="openai:test-model", OPENAI_BASE_URL=model.base_url)
