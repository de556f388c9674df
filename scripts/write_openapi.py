#!/usr/bin/env python3
"""Write studio_web/openapi.json from the studio API's code (the API serves the same document), and
studio_web/facts-openapi.json from the Facts API's (FactsApiFunction, the same HTTP API's facts routes).

    .venv/bin/python scripts/write_openapi.py
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


DOCUMENTS = {"studio_api": "openapi.json", "facts_api": "facts-openapi.json"}


def document(function: str = "studio_api") -> dict:
    os.environ.setdefault("KNOWLEDGE_BUCKET", "openapi-document")
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    if function == "facts_api":  # its cold start builds the Facts service: settings it never uses here
        os.environ.setdefault("SESSIONS_BUCKET", "openapi-document")
        os.environ.setdefault("FACTS_KEY", "openapi-document-" * 3)
    spec = importlib.util.spec_from_file_location(f"{function}_app", ROOT / "functions" / function / "app.py")
    app = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(app)
    return json.loads(app.openapi_document())


def main() -> int:
    for function, name in DOCUMENTS.items():
        (ROOT / "studio_web" / name).write_text(json.dumps(document(function), indent=2, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
