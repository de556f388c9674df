"""Load the real Lambda handlers (functions/<name>/app.py) in this process, as Lambda would."""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any, Optional

from .template import ROOT, load_template


def function_variables(function: str) -> dict[str, Any]:
    """The environment template.yaml declares for functions/<function>/: Globals' variables, then the
    function's own; a literal as written, a reference (!Ref, !If...) as the template's data."""
    template = load_template()
    variables = dict(template.get("Globals", {}).get("Function", {}).get("Environment", {}).get("Variables", {}))
    found = False
    for resource in template.get("Resources", {}).values():
        props = resource.get("Properties", {})
        if resource.get("Type") == "AWS::Serverless::Function" and props.get("CodeUri", "").rstrip("/") == f"functions/{function}":
            variables.update(props.get("Environment", {}).get("Variables", {}))
            found = True
    if not found:
        raise ValueError(f"template.yaml declares no function whose CodeUri is functions/{function}")
    return variables


def function_literals(function: str) -> dict[str, str]:
    """The literal (non-!Ref) environment values the template gives functions/<function>/:
    those of Globals, then the function's own."""
    return {k: str(v) for k, v in function_variables(function).items() if isinstance(v, (str, int, float))}


def load_handler(function: str, module_name: Optional[str] = None, template_settings: bool = True) -> ModuleType:
    """Import functions/<function>/app.py under its own module name, as its cold start would.

    The shared environment must already be set. With `template_settings`, the function's own
    literal settings from the template (POWERTOOLS_SERVICE_NAME, ...) are applied first.
    """
    if template_settings:
        os.environ.update(function_literals(function))
    path = ROOT / "functions" / function / "app.py"
    name = module_name or f"knowledge_function_{function}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def distill_handler(idle_minutes: Optional[float] = None, module_name: Optional[str] = None) -> ModuleType:
    """The real DistillFunction handler; with `idle_minutes`, the local stack's idle shortcut:
    a session is due once nobody wrote for that long, when that is shorter than the agent's
    `distill.idle_hours` (dev only: the deployed schedule always waits `idle_hours`)."""
    module = load_handler("distill", module_name)
    if idle_minutes is None:
        return module
    if idle_minutes < 0:
        raise ValueError("idle_minutes must be 0 or more")
    module.service.get().idle_hours_at_most = idle_minutes / 60
    return module


def function_timeout_ms(function: str) -> int:
    """functions/<function>/'s Timeout in the template (a parameter's default when it is a !Ref)."""
    template = load_template()
    timeout = template.get("Globals", {}).get("Function", {}).get("Timeout", 3)
    for resource in template.get("Resources", {}).values():
        props = resource.get("Properties", {})
        if resource.get("Type") == "AWS::Serverless::Function" and (
                props.get("CodeUri", "").rstrip("/") == f"functions/{function}"):
            timeout = props.get("Timeout", timeout)
    if isinstance(timeout, dict) and "Ref" in timeout:
        timeout = template["Parameters"][timeout["Ref"]]["Default"]
    return int(timeout) * 1000


@contextmanager
def handler_environment(**settings: str) -> Iterator[None]:
    """These settings in the environment for the handlers loaded meanwhile (boto3's clients made
    again on them), and afterwards the environment exactly as it was, including what a handler's
    template settings added."""
    from shared.aws import client

    saved = dict(os.environ)
    os.environ.update(settings)
    client.cache_clear()
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)
        client.cache_clear()
