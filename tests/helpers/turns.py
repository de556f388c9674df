"""The demo turn's SQS body, with overrides, and what in its content must never be printed."""

from __future__ import annotations

import json

from helpers.handlers import load_event

SECRET = "ana.souza@example.com"  # in the demo turn's content: must never be printed


def turn_body(**overrides) -> str:
    body = json.loads(load_event("turn-complete.json")["Records"][0]["body"])
    body.update(overrides)
    return json.dumps(body, ensure_ascii=False)
