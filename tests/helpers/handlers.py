"""The Lambda handlers as Lambda runs them: functions/<name>/app.py imported at a cold start, the
events/ that `sam local invoke` uses, and a context."""

from __future__ import annotations

import functools
import json
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Optional

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


@functools.cache
def _declared(function: str) -> dict[str, object]:
    from knowledge_dev.handlers import function_variables

    return function_variables(function)


@functools.cache
def _declared_anywhere() -> frozenset[str]:
    """Every variable template.yaml gives some function (Globals' and each function's own)."""
    from knowledge_dev.handlers import function_variables
    from knowledge_dev.template import load_template

    functions = [resource["Properties"]["CodeUri"].rstrip("/").removeprefix("functions/")
                 for resource in load_template()["Resources"].values()
                 if resource.get("Type") == "AWS::Serverless::Function"]
    return frozenset(name for function in functions for name in function_variables(function))


def function_env(function: str, stack: Mapping[str, str], **overrides: str) -> dict[str, str]:
    """functions/<function>/'s environment as template.yaml declares it, Globals' variables then its
    own: a literal as written (POWERTOOLS_SERVICE_NAME...), a reference from `stack` — the test's
    stand-ins for the stack's buckets, queues, bus and parameters, keyed by the variable that names
    them — or unset, the code's default, when the test stands in for none. A stand-in the template
    gives this function no variable for is left out, as Lambda would; one it gives no function at
    all (FACTS_KEY, OPENAI_API_KEY, a tuning knob) passes through. `overrides` win, but one the
    template gives other functions and not this one is refused: the deployed function never has it."""
    declared = _declared(function)
    stray = sorted(name for name in overrides if name in _declared_anywhere() and name not in declared)
    if stray:
        raise ValueError(f"template.yaml gives functions/{function} no {', '.join(stray)}")
    env = {name: str(value) for name, value in declared.items() if isinstance(value, (str, int, float))}
    env.update({name: value for name, value in stack.items() if name in declared or name not in _declared_anywhere()})
    env.update(overrides)
    return env


def load_handler(function: str, monkeypatch, stack: Optional[Mapping[str, str]] = None, /, **env: str):
    """Import functions/<function>/app.py afresh, as Lambda would at cold start. With `stack`, the
    variables set are function_env's (the template's for it, from the test's stand-ins, then `env`);
    without, only `env`, as written (a test of a misconfigured function). What an earlier load set
    stays: a handler builds its services at its first request, from the environment then."""
    from knowledge_dev.handlers import load_handler as load_real_handler

    if stack is not None:
        env = function_env(function, stack, **env)
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
