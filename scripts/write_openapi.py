#!/usr/bin/env python3
"""Write studio_web/openapi.json from the studio API's code (the API serves the same document).

    .venv/bin/python scripts/write_openapi.py
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def document() -> dict:
    os.environ.setdefault("KNOWLEDGE_BUCKET", "openapi-document")
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    spec = importlib.util.spec_from_file_location("studio_api_app", ROOT / "functions" / "studio_api" / "app.py")
    app = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(app)
    return json.loads(app.openapi_document())


def main() -> int:
    (ROOT / "studio_web" / "openapi.json").write_text(json.dumps(document(), indent=2, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
