"""`./run knowledge ...`: the real `knowledge` command, pointed at the running local stack."""

from __future__ import annotations

import json
import os
import sys
import urllib.request
from typing import Optional, Sequence

from .stack import STATE_FILE


def main(argv: Optional[Sequence[str]] = None) -> int:
    try:
        state = json.loads(STATE_FILE.read_text())
        urllib.request.urlopen(state["env"]["AWS_ENDPOINT_URL"] + "/moto-api/", timeout=2).close()
    except (OSError, ValueError, KeyError):
        print("the local stack is not running: start it with ./run local (in another terminal)", file=sys.stderr)
        return 1
    os.environ.update(state["env"])
    from knowledge.cli import main as knowledge

    return knowledge(argv)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
