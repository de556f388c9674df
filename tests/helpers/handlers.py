"""The Lambda handlers as Lambda runs them: functions/<name>/app.py imported at a cold start, the
events/ that `sam local invoke` uses, and a context."""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass

from helpers.paths import EVENTS


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


def until(check, seconds: float = 60.0):
    """Ask `check()` until it answers true (a warm container's refresh window passing; a loaded
    machine may take longer than the window), and answer its last value."""
    ends = time.monotonic() + seconds
    while True:
        value = check()
        if value or time.monotonic() > ends:
            return value
        time.sleep(0.1)
