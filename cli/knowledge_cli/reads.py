"""`knowledge list`: an agent's concepts as retrieval serves them, read-only (the builders' read,
knowledge.recall.reads, run in this process as RetrieveFunction runs it)."""

from __future__ import annotations

import argparse
from typing import Any, Callable


def add_commands(commands: Any, slug: Callable[[str], Callable[[str], str]], positive: Callable[[str], int]) -> None:
    listing = commands.add_parser("list", help="list an agent's concepts as retrieval serves them (read-only)")
    listing.add_argument("--agent", type=slug("agent"), required=True)
    listing.add_argument("--tenant", default="default", type=slug("tenant"))
    listing.add_argument("--type", choices=("fact", "entity", "procedure", "policy", "objection"))
    listing.add_argument("--provenance", choices=("observed", "policy"))
    listing.add_argument("--recall", choices=("in_recall", "expired", "not_started", "stale", "retired", "waiting",
                                              "conflict"))
    listing.add_argument("--since", help="only concepts updated since this UTC day (YYYY-MM-DD) or moment")
    listing.add_argument("--limit", type=positive, default=100, help="a page's size (1 to 100)")
    listing.add_argument("--after", type=slug("after"), help="the page after this name (`next:` of the last page)")
    listing.add_argument("--json", action="store_true", help="print the whole answer")
    listing.set_defaults(run=_list)


def _list(args: argparse.Namespace) -> int:
    import json
    import os

    from knowledge import wiring
    from shared.settings import Settings

    # A terminal is a cold container: wait for the whole agent rather than answer from part of it.
    os.environ.setdefault("KNOWLEDGE_FETCH_BUDGET_SECONDS", "600")
    reader = wiring.reader(wiring.retriever(Settings.from_env()))
    event = {"action": "list_knowledge", "tenant": args.tenant, "agent": args.agent, "limit": args.limit,
             **{k: v for k in ("type", "provenance", "recall", "since", "after") if (v := getattr(args, k))}}
    answer = reader.handle(event)
    if args.json:
        print(json.dumps(answer, ensure_ascii=False, indent=1))
        return 0
    for c in answer["concepts"]:
        state = ", ".join(filter(None, [c["recall"], "conflict" if c["conflict"] else None,
                                        f"{c['waiting']} waiting" if c["waiting"] else None,
                                        "shared" if c["shared"] else None])) or "in recall"
        words = ", ".join(f"{w['word']} ({w['origin']})" for w in c["learned_words"])
        print(f"{c['name']:<40} {c['type']:<10} {c['provenance']:<9} {state}" + (f"  words: {words}" if words else ""))
    more = f"; next: --after {answer['next_after']}" if answer["next_after"] else ""
    print(f"{len(answer['concepts'])} of {answer['total']} concepts{more}")
    return 0
