#!/usr/bin/env python3
"""Write the published JSON Schemas (schemas/*.schema.json) from the core's models.

The queue messages (turn-complete, sighting) and, for each direct invocation of RetrieveFunction and
MemoryFunction, its request (the model the function validates with) and its answer (the model the
function builds its answer from), and the refusal both answer.

    ./run script gen.schemas          # rewrite
    ./run script gen.schemas --check  # exit 1 when a file is stale (the smoke run)
"""

from __future__ import annotations

import json
import sys
from typing import Callable

from pydantic import BaseModel

from facts.memory import ReadAnswer, ReadRequest, RememberAnswer, RememberRequest
from knowledge.format.sighting import sighting_schema
from knowledge.format.turn import turn_schema
from knowledge.learning.save import SAVE_TOOL, SaveAnswer, SaveRequest, StatusAnswer, StatusRequest
from knowledge.recall.answers import LoadAnswer, RetrieveAnswer, SearchAnswer
from knowledge.recall.reads import HistoryAnswer, HistoryRequest, ListAnswer, ListRequest
from knowledge.recall.retrieve import SEARCH_TOOL, TOOL, LoadRequest, RetrieveRequest, SearchRequest
from scripts.lib.harness import ROOT, did_work
from shared.refusal import Refusal

SCHEMAS = ROOT / "schemas"
DRAFT = "https://json-schema.org/draft/2020-12/schema"
RETRIEVE = "RetrieveFunction (Lambda Invoke, RequestResponse)"
MEMORY = "MemoryFunction (Lambda Invoke, RequestResponse)"


def published(model: type[BaseModel], description: str, mode: str) -> Callable[[], dict]:
    """A model's JSON Schema as published: requests as the function validates them, answers as it
    serializes them."""
    def build() -> dict:
        schema = model.model_json_schema(mode=mode)  # type: ignore[arg-type]
        return {"$schema": DRAFT, **schema, "description": description}
    return build


# A call's request and answer: (file stem, request model, answer model, what it is)
CALLS = [
    ("retrieve", RetrieveRequest, RetrieveAnswer, f"{RETRIEVE}: the <knowledge> block for one turn"),
    ("load-knowledge", LoadRequest, LoadAnswer, f"{RETRIEVE}: load_knowledge, one concept's full text"),
    ("search-knowledge", SearchRequest, SearchAnswer, f"{RETRIEVE}: search_knowledge, the ranked summaries for a query"),
    ("save-knowledge", SaveRequest, SaveAnswer, f"{RETRIEVE}: save_knowledge, an insight learned as extraction learns"),
    ("save-status", StatusRequest, StatusAnswer, f"{RETRIEVE}: save_status, what became of a save_knowledge call"),
    ("list-knowledge", ListRequest, ListAnswer, f"{RETRIEVE}: list_knowledge, the agent's concepts a page at a time"),
    ("knowledge-history", HistoryRequest, HistoryAnswer,
     f"{RETRIEVE}: knowledge_history, a concept's versions and one version's text"),
    ("memory-read", ReadRequest, ReadAnswer, f"{MEMORY}: the customer's memory cell and its <memory> block"),
    ("memory-remember", RememberRequest, RememberAnswer, f"{MEMORY}: remember one fact (origin engine)"),
]

FILES: dict[str, Callable[[], dict]] = {"turn-complete.schema.json": turn_schema,
                                        "sighting.schema.json": sighting_schema}
for stem, request, answer, what in CALLS:
    FILES[f"{stem}.request.schema.json"] = published(request, f"The request to {what}.", "validation")
    FILES[f"{stem}.answer.schema.json"] = published(answer, f"The answer of {what}.", "serialization")
# The tool definitions an engine hands its model (name, description, input_schema), each input the
# model-written part of its request model.
FILES["tools.json"] = lambda: {"tools": [tool.model_dump(mode="json") for tool in (TOOL, SEARCH_TOOL, SAVE_TOOL)]}
FILES["refusal.schema.json"] = published(
    Refusal, "What RetrieveFunction and MemoryFunction answer instead when they refuse a request.", "serialization")


def rendered() -> dict[str, str]:
    return {name: json.dumps(build(), indent=2, ensure_ascii=False) + "\n" for name, build in FILES.items()}


def main() -> int:
    stale = []
    for name, text in rendered().items():
        path = SCHEMAS / name
        if "--check" in sys.argv:
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                stale.append(name)
        else:
            path.write_text(text, encoding="utf-8")
    if "--check" in sys.argv:
        unknown = sorted(p.name for p in SCHEMAS.glob("*.json") if p.name not in FILES)
        if unknown:
            print(f"not written by this script: {', '.join(unknown)}", file=sys.stderr)
            return 1
    if stale:
        print(f"stale: {', '.join(stale)}; run ./run script gen.schemas", file=sys.stderr)
    did_work("published schemas equal to the models'", len(FILES) - len(stale), len(FILES))
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
