"""Load the real Lambda handlers (functions/<name>/app.py) in this process, as Lambda would."""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType
from typing import Optional

import os

from .template import ROOT, load_template


def function_literals(function: str) -> dict[str, str]:
    """The literal (non-!Ref) environment values the template gives functions/<function>/:
    those of Globals, then the function's own."""
    template = load_template()
    variables = dict(template.get("Globals", {}).get("Function", {}).get("Environment", {}).get("Variables", {}))
    for resource in template.get("Resources", {}).values():
        props = resource.get("Properties", {})
        if resource.get("Type") == "AWS::Serverless::Function" and props.get("CodeUri", "").rstrip("/") == f"functions/{function}":
            variables.update(props.get("Environment", {}).get("Variables", {}))
    return {k: str(v) for k, v in variables.items() if isinstance(v, (str, int, float))}


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
