#!/usr/bin/env python3
"""Write studio_web/openapi.json from the studio API's code (the API serves the same document), and
studio_web/facts-openapi.json from the Facts API's (FactsApiFunction, the same HTTP API's facts routes).

    ./run script gen.openapi           # rewrite
    ./run script gen.openapi --check   # exit 1 when a document is stale (the smoke run)
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys

from scripts.lib.harness import ROOT, did_work

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
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 when a document is stale")
    check = parser.parse_args().check
    current = 0
    for function, name in DOCUMENTS.items():
        path, text = ROOT / "studio_web" / name, json.dumps(document(function), indent=2, ensure_ascii=False) + "\n"
        if not check:
            path.write_text(text)
        fresh = path.exists() and path.read_text() == text
        current += fresh
        if not fresh:
            print(f"stale: {path.relative_to(ROOT)}; run ./run script gen.openapi", file=sys.stderr)
    did_work("OpenAPI documents equal to what the code serves", current, len(DOCUMENTS))
    return 0 if current == len(DOCUMENTS) else 1


if __name__ == "__main__":
    sys.exit(main())
