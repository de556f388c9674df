"""`./run knowledge ...`: the real `knowledge` command, pointed at the running local stack.

Extra commands invoke the real handlers in this process, as the engine (or the schedule)
would invoke the Lambdas:
    ./run knowledge retrieve --agent A [--tenant T] [--session S] "customer message"
    ./run knowledge load --agent A [--tenant T] [--session S] NAME
    ./run knowledge save FILE                                         save_knowledge (events/save-knowledge.json)
    ./run knowledge save-status --agent A SAVE_ID                    what became of that save
    ./run knowledge memory --customer C [--tenant T]                 MemoryFunction's read
    ./run knowledge remember --customer C [--tenant T] NAME VALUE    MemoryFunction's remember
    ./run knowledge distill-now [--tenant T [--agent A]]             DistillFunction, every session idle
and the Facts page's API (the real FactsApiFunction handler), as the local operator dev-operator:
    ./run knowledge facts list --agent A [--tenant T] [--list pending|stale|recent]
    ./run knowledge facts approve|dismiss --agent A ID   /   facts reject --agent A ID [--reason TEXT]
and one to play the engine's part:
    ./run knowledge send-conversation FILE [--keep-times]   one turn-complete JSON per line
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import urllib.request
from datetime import datetime, timezone
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
    if answer.get("reason") == "unknown_agent":
        print(f"knowledge {argv[0]}: there is no agent {args.agent!r} in tenant {args.tenant!r}: it has neither a "
              "knowledge.yaml nor any concept (unknown_agent; check the agent's name)", file=sys.stderr)
        return 1
    if answer.get("reason") == "retrieval_off":
        print("(retrieval is off for this agent: its knowledge.yaml is missing, says retrieve: false, or does "
              "not parse)")
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


def _save(argv: Sequence[str]) -> int:
    """save_knowledge as the engine's tool call sends it: one JSON file (events/save-knowledge.json)."""
    parser = argparse.ArgumentParser(prog="knowledge save")
    parser.add_argument("file", help="a save_knowledge request as JSON (events/save-knowledge.json)")
    args = parser.parse_args(argv[1:])
    try:
        event = json.loads(open(args.file, encoding="utf-8").read())
    except (OSError, ValueError) as exc:
        print(f"knowledge save: cannot read {args.file}: {exc}", file=sys.stderr)
        return 1
    _quiet()
    from .handlers import load_handler
    from .poller import LambdaContext

    answer = load_handler("retrieve").lambda_handler(event, LambdaContext("retrieve", timeout_ms=60_000))
    print(json.dumps(answer, ensure_ascii=False, indent=1))
    return 1 if "error" in answer else 0


def _save_status(argv: Sequence[str]) -> int:
    """save_status: what became of a save, by the save_id `knowledge save` printed."""
    parser = argparse.ArgumentParser(prog="knowledge save-status")
    parser.add_argument("--agent", required=True)
    parser.add_argument("--tenant", default="default")
    parser.add_argument("save_id")
    args = parser.parse_args(argv[1:])
    _quiet()
    from .handlers import load_handler
    from .poller import LambdaContext

    event = {"action": "save_status", "tenant": args.tenant, "agent": args.agent, "save_id": args.save_id}
    answer = load_handler("retrieve").lambda_handler(event, LambdaContext("retrieve", timeout_ms=60_000))
    print(json.dumps(answer, ensure_ascii=False, indent=1))
    return 1 if "error" in answer else 0


def _quiet() -> None:
    os.environ["POWERTOOLS_METRICS_DISABLED"] = "true"  # a terminal: no EMF lines on stdout
    os.environ["POWERTOOLS_LOG_LEVEL"] = "WARNING"  # nor the function's info lines: the answer is the output


def _memory(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog=f"knowledge {argv[0]}")
    parser.add_argument("--customer", required=True, help="the engine's customer id")
    parser.add_argument("--tenant", default="default")
    parser.add_argument("--json", action="store_true", help="print the whole answer")
    if argv[0] == "remember":
        parser.add_argument("name")
        parser.add_argument("value")
    args = parser.parse_args(argv[1:])
    _quiet()
    from .handlers import load_handler
    from .poller import LambdaContext

    event = {"action": "read" if argv[0] == "memory" else "remember", "tenant": args.tenant,
             "customer_id": args.customer}
    if argv[0] == "remember":
        event.update(name=args.name, value=args.value)
    answer = load_handler("memory").lambda_handler(event, LambdaContext("memory"))
    if args.json or "error" in answer:
        print(json.dumps(answer, ensure_ascii=False, indent=1))
        return 1 if "error" in answer else 0
    if argv[0] == "remember":
        fact = answer["fact"]
        print(f"remembered {fact['name']} (revision {fact['revision']}, origin {fact['origin']})")
        return 0
    print(answer["block"] or "(no memory for this customer: the block is empty)")
    for fact in answer["facts"]:
        print(f"  {fact['name']}: origin {fact['origin']}, revision {fact['revision']}, {fact['at']}")
    return 0


def _distill_now(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="knowledge distill-now",
                                     description="One DistillFunction pass now, every session taken as idle "
                                                 "(a local shortcut: deployed, a session waits idle_hours).")
    parser.add_argument("--tenant")
    parser.add_argument("--agent")
    args = parser.parse_args(argv[1:])
    _quiet()
    from .handlers import distill_handler, function_timeout_ms
    from .poller import LambdaContext

    event = {key: value for key, value in (("tenant", args.tenant), ("agent", args.agent)) if value}
    answer = distill_handler(idle_minutes=0).lambda_handler(
        event, LambdaContext("distill", timeout_ms=function_timeout_ms("distill")))
    print(json.dumps(answer, ensure_ascii=False))
    return 0 if answer.get("ok") else 1


def _send_conversation(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="knowledge send-conversation",
                                     description="Send a conversation's turns (one turn-complete JSON per line, "
                                                 "as the engine's exports) to the TurnCompleteQueue.")
    parser.add_argument("file")
    parser.add_argument("--keep-times", action="store_true",
                        help="send completed_at as written (default: moved so the last turn completes now, "
                             "the gaps kept, as if the conversation had just happened)")
    args = parser.parse_args(argv[1:])
    from pathlib import Path

    from knowledge.format.turn import parse_turn
    from shared.aws import client
    from shared.errors import KnowledgeError
    from shared.settings import Settings

    try:
        lines = [line for line in Path(args.file).read_bytes().splitlines() if line.strip()]
    except OSError as exc:
        raise KnowledgeError(f"cannot read {args.file}: {exc.strerror}") from None
    turns = [parse_turn(line) for line in lines]  # every line valid before any is sent
    if not turns:
        raise KnowledgeError(f"{args.file} holds no turn")
    shift = (datetime.now(timezone.utc) - max(t.completed_at for t in turns)) if not args.keep_times else None
    queue = Settings.from_env(require=("TURN_QUEUE_URL",)).turn_queue_url
    sqs = client("sqs")
    for turn in turns:
        if shift is not None:
            turn = turn.model_copy(update={"completed_at": turn.completed_at + shift})
        sqs.send_message(QueueUrl=queue, MessageBody=turn.model_dump_json())
        who = f", customer {turn.customer_id}" if turn.customer_id else ""
        print(f"sent turn {turn.turn_id} of session {turn.session_id} ({turn.tenant}/{turn.agent}{who})")
    return 0


def _facts(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="knowledge facts",
                                     description="The Facts page's API (the real FactsApiFunction handler), as the "
                                                 "local dev operator.")
    actions = parser.add_subparsers(dest="action", required=True)
    listing = actions.add_parser("list", help="the agent's proposals: pending oldest first, stale, recent decisions")
    listing.add_argument("--list", choices=["pending", "stale", "recent"], action="append", dest="lists",
                         help="only these lists (repeatable; default: all three)")
    for action in ("approve", "reject", "dismiss"):
        decide = actions.add_parser(action, help=f"{action} one proposal (an id from `facts list`, or its start)")
        decide.add_argument("id")
        if action == "reject":
            decide.add_argument("--reason")
    for sub in actions.choices.values():
        sub.add_argument("--agent", required=True)
        sub.add_argument("--tenant", default="default")
    args = parser.parse_args(argv[1:])
    _quiet()
    from shared.errors import KnowledgeError

    api = FactsApi(args.tenant, args.agent)
    if args.action == "list":
        shown = 0
        for state in args.lists or ["pending", "stale", "recent"]:
            for p in api.proposals(state):
                shown += 1
                confidence = f"{p['confidence']:.2f}" if p.get("confidence") is not None else "-"
                decided = f", {p['status']} by {p['resolved_by']}" if p.get("resolved_by") else ""
                reason = f": {p['reason']}" if p.get("reason") else ""
                now = f"; now {p['current']['value']!r}" if p.get("current") else ""
                print(f"{p['id'][:12]}  {p['status']:<9}  {p['customer_id']}  {p['name']} = {p['value']}  "
                      f"(confidence {confidence}, session {p['session_id']}{decided}{reason}{now})")
        if not shown:
            print("(no proposals)")
        return 0
    every = [p for state in ("pending", "stale", "recent") for p in api.proposals(state)]
    matches = [p for p in every if len(args.id) >= 6 and p["id"].startswith(args.id.lower())]
    if len(matches) != 1:
        raise KnowledgeError(f"{args.id!r} names {len(matches)} proposals of {args.tenant}/{args.agent}: "
                             "give more of the id from `facts list` (at least 6 characters)")
    chosen = matches[0]
    body = {"reason": args.reason} if args.action == "reject" and args.reason else None
    status, answer = api.call("POST", f"/proposals/{chosen['customer_id']}/{chosen['id']}/{args.action}", body=body)
    if status != 200:
        error = answer.get("error", {})
        print(f"knowledge facts {args.action}: {error.get('message')} ({error.get('code')}, HTTP {status})",
              file=sys.stderr)
        return 1
    print(f"{answer['id'][:12]}  {answer['status']}  {answer['name']}")
    return 0


class FactsApi:
    """The real FactsApiFunction handler in this process, called with the HTTP API events API Gateway
    sends it behind the JWT authorizer, as the local dev operator."""

    def __init__(self, tenant: str, agent: str):
        from .handlers import load_handler
        from .studio_server import DEV_OPERATOR

        self._handler = load_handler("facts_api").lambda_handler
        self._claims = DEV_OPERATOR
        self._base = f"/tenants/{tenant}/agents/{agent}/facts"

    def call(self, method: str, path: str, query: str = "", body: Optional[dict] = None) -> tuple[int, dict]:
        from .poller import LambdaContext
        from .studio_server import http_api_event

        headers = {"content-type": "application/json"} if body is not None else {}
        event = http_api_event(method, self._base + path, query, headers,
                               json.dumps(body) if body is not None else None, self._claims, "127.0.0.1")
        answer = self._handler(event, LambdaContext("facts_api"))
        return answer["statusCode"], json.loads(answer.get("body") or "{}")

    def proposals(self, state: str) -> list[dict]:
        from shared.errors import KnowledgeError

        found, cursor = [], None
        while True:
            status, page = self.call("GET", "/proposals", f"state={state}&limit=50"
                                     + (f"&cursor={cursor}" if cursor else ""))
            if status != 200:
                raise KnowledgeError(f"the Facts API answered {status}: {page.get('error', {}).get('message')}")
            found += page["proposals"]
            cursor = page.get("next")
            if not cursor:
                return found


def _probe(url: str, attempts: int = 3) -> None:
    """Raises OSError when the stack's endpoint does not answer; a busy stack gets a second chance."""
    import time

    for attempt in range(attempts):
        try:
            urllib.request.urlopen(url, timeout=10).close()
            return
        except OSError:
            if attempt == attempts - 1:
                raise
            time.sleep(1)


# The commands this module runs itself, as `knowledge --help` lists them beside the CLI's.
LOCAL_HELP = (
    ("retrieve", "RetrieveFunction's <knowledge> block for a customer's message (--agent A \"message\")"),
    ("load", "load_knowledge: one concept as the engine's tool gets it (--agent A NAME)"),
    ("save", "save_knowledge as the engine's tool call sends it (a JSON file: events/save-knowledge.json)"),
    ("save-status", "save_status: what became of a save (--agent A SAVE_ID)"),
    ("memory", "MemoryFunction's read: a customer's <memory> block (--customer C)"),
    ("remember", "MemoryFunction's remember: one fact written as the engine's tool (--customer C NAME VALUE)"),
    ("distill-now", "one DistillFunction pass now, every session taken as idle"),
    ("send-conversation", "send a conversation's turns (one turn-complete JSON per line) to the TurnCompleteQueue"),
    ("facts", "the Facts page's API as the local operator: facts list | approve | reject | dismiss"),
)


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):  # every command, whether or not the stack runs
        from knowledge_cli.main import build_parser

        print(build_parser(also=LOCAL_HELP).format_help(), end="")
        return 0 if argv else 2
    try:
        state = json.loads(STATE_FILE.read_text())
        _probe(state["env"]["AWS_ENDPOINT_URL"] + "/moto-api/")
    except (OSError, ValueError, KeyError) as exc:
        why = "" if isinstance(exc, FileNotFoundError) else f" ({type(exc).__name__}: {exc})"
        print(f"the local stack is not running{why}: start it with ./run local (in another terminal)",
              file=sys.stderr)
        return 1
    os.environ.update(state["env"])
    if argv and argv[0] in ("retrieve", "load"):
        return _invoke(argv)
    local = {"save": _save, "save-status": _save_status, "memory": _memory, "remember": _memory, "distill-now": _distill_now,
             "send-conversation": _send_conversation, "facts": _facts}
    if argv and argv[0] in local:
        from shared.errors import KnowledgeError

        try:
            return local[argv[0]](argv)
        except KnowledgeError as exc:
            print(f"knowledge {argv[0]}: {exc} ({exc.code})", file=sys.stderr)
            return 1
    from knowledge_cli.main import main as knowledge

    return knowledge(argv)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
