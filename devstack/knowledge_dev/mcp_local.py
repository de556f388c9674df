"""`./run mcp`: the MCP server (knowledge_client.mcp_server) against the running `./run local`.

Reads the stack's state file for its Lambda Invoke endpoint and sets the local credentials; any
other option passes on (`./run mcp --agent store-support --http --port 8765`, with
KNOWLEDGE_MCP_TOKEN set for HTTP). The agent defaults to the demo's.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Optional, Sequence

from .stack import DEMO_AGENT, LOCAL_CREDENTIALS, STATE_FILE


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        env = json.loads(STATE_FILE.read_text())["env"]
    except (OSError, ValueError, KeyError):
        print("knowledge-mcp: the local stack is not running: start it with ./run local", file=sys.stderr)
        return 1
    os.environ.update(LOCAL_CREDENTIALS)
    os.environ["KNOWLEDGE_LAMBDA_ENDPOINT"] = env["KNOWLEDGE_LAMBDA_ENDPOINT"]
    if "--agent" not in args:
        args = ["--agent", DEMO_AGENT, *args]
    from knowledge_client.mcp_server import main as serve

    return serve(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
