#!/usr/bin/env python3
"""Write the published JSON Schemas (schemas/*.schema.json) from the core's models.

    .venv/bin/python scripts/write_schemas.py          # rewrite
    .venv/bin/python scripts/write_schemas.py --check  # exit 1 when a file is stale
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from knowledge.format.sighting import sighting_schema
from knowledge.format.turn import turn_schema

SCHEMAS = Path(__file__).resolve().parents[1] / "schemas"
FILES = {"turn-complete.schema.json": turn_schema, "sighting.schema.json": sighting_schema}


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
    if stale:
        print(f"stale: {', '.join(stale)}; run scripts/write_schemas.py", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
