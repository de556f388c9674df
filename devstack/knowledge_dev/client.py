"""`./run knowledge ...`: the real `knowledge` command, pointed at the running local stack.

Two extra commands invoke the real RetrieveFunction handler in this process, as the engine
would invoke the Lambda:
    ./run knowledge retrieve --agent A [--tenant T] [--session S] "customer message"
    ./run knowledge load --agent A [--tenant T] [--session S] NAME
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import urllib.request
from typing import Optional, Sequence

from .stack import STATE_FILE


def _invoke(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog=f"knowledge {argv[0]}")
    parser.add_argument("--agent", required=True)
    parser.add_argument("--tenant", default="default")
    parser.add_argument("--session", default="sess_local_cli")
    parser.add_argument("--json", action="store_true", help="print the whole answer")
    parser.add_argument("text", help="the customer's message (retrieve) or a concept name (load)")
    args = parser.parse_args(argv[1:])
    os.environ["POWERTOOLS_METRICS_DISABLED"] = "true"  # this is a terminal: no EMF lines on stdout
    os.environ["POWERTOOLS_LOG_LEVEL"] = "WARNING"  # nor the function's info log lines: the answer is the output
    # Each command is a fresh process (a cold container): a person at a terminal would rather
    # wait for the whole agent than get an answer from part of it.
    os.environ.setdefault("KNOWLEDGE_FETCH_BUDGET_SECONDS", "600")
    from .handlers import load_handler
    from .poller import LambdaContext

    handler = load_handler("retrieve")
    event = {"tenant": args.tenant, "agent": args.agent, "session_id": args.session}
    if argv[0] == "load":
        event.update(action="load_knowledge", name=args.text)
    else:
        event["message"] = args.text
    answer = handler.lambda_handler(event, LambdaContext("retrieve", timeout_ms=3_600_000))
    if args.json or "error" in answer:
        print(json.dumps(answer, ensure_ascii=False, indent=1))
        return 1 if "error" in answer else 0
    if argv[0] == "load":
        sys.stdout.write(answer["markdown"])
        return 0
    if not answer["block"]:
        print("(nothing relevant: the block is empty)")
        return 0
    print(answer["block"])
    print()
    for concept in answer["concepts"]:
        via = "  (via a [[link]])" if concept["linked"] else ""
        print(f"  {concept['score']:>8.3f}  {concept['name']}{via}")
    return 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        state = json.loads(STATE_FILE.read_text())
        urllib.request.urlopen(state["env"]["AWS_ENDPOINT_URL"] + "/moto-api/", timeout=2).close()
    except (OSError, ValueError, KeyError):
        print("the local stack is not running: start it with ./run local (in another terminal)", file=sys.stderr)
        return 1
    os.environ.update(state["env"])
    if argv and argv[0] in ("retrieve", "load"):
        return _invoke(argv)
    from knowledge.cli import main as knowledge

    return knowledge(argv)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
