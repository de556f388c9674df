"""`knowledge vocabulary show|set`: an agent's vocabulary.yaml (its customers' words read as the
store's), printed, or saved from a file or a shipped starter (validated, compare-and-swap on the
ETag just read, journaled: warm retrieval containers obey it at their next refresh)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Callable

from knowledge.errors import InvalidVocabulary
from knowledge.format.vocabulary import STARTERS, parse_vocabulary, starter_text
from shared.errors import KnowledgeError, UnknownAgent
from shared.httpapi import OPERATOR_ID


def add_commands(commands: Any, slug: Callable[[str], Callable[[str], str]], operator: Callable[[str], str],
                 store: Callable[[], Any]) -> None:
    vocabulary = commands.add_parser("vocabulary", help="show or set an agent's vocabulary.yaml")
    actions = vocabulary.add_subparsers(dest="action", required=True)
    show = actions.add_parser("show", help="print the agent's vocabulary.yaml (and whether recall holds it)")
    put = actions.add_parser("set", help="save vocabulary.yaml from a file, or copy a starter into it")
    for parser in (show, put):
        parser.add_argument("--agent", required=True, type=slug("agent"))
        parser.add_argument("--tenant", default="default", type=slug("tenant"))
    given = put.add_mutually_exclusive_group(required=True)
    given.add_argument("--file", help="a vocabulary.yaml to save (`-`: standard input)")
    given.add_argument("--starter", choices=sorted(STARTERS), help="copy a shipped starter (then edit it: set "
                                                                   "--file with your changes)")
    put.add_argument("--operator", type=operator, default=None,
                     help="who saves: the version's actor is operator:<id> (default: $KNOWLEDGE_OPERATOR, else "
                          "your login name)")
    show.set_defaults(run=lambda args: _show(args, store()))
    put.set_defaults(run=lambda args: _set(args, store()))


def _show(args: argparse.Namespace, store: Any) -> int:
    stored = store.get_vocabulary(args.tenant, args.agent)
    if stored is None:
        print(f"{args.tenant}/{args.agent} has no vocabulary.yaml (no readings)", file=sys.stderr)
        return 0
    sys.stdout.write(stored.text)
    try:
        vocabulary = parse_vocabulary(stored.data)
    except KnowledgeError as exc:
        print(f"not in force, recall runs without it: {exc}", file=sys.stderr)
        return 1
    phrases = sum(len(reading.customers) for reading in vocabulary.readings)
    print(f"{len(vocabulary.readings)} readings, {phrases} phrases ({stored.etag})", file=sys.stderr)
    return 0


def _set(args: argparse.Namespace, store: Any) -> int:
    import getpass
    import os

    if args.starter:
        text = starter_text(args.starter)
    elif args.file == "-":
        text = sys.stdin.read()
    else:
        try:
            text = Path(args.file).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise KnowledgeError(f"cannot read {args.file}: {getattr(exc, 'strerror', None) or exc}") from None
    who = args.operator or os.environ.get("KNOWLEDGE_OPERATOR") or getpass.getuser()
    if not OPERATOR_ID.fullmatch(who):
        raise KnowledgeError("say who saves with --operator (letters, digits, '.', '_', '@', '+', ':', '-')")
    parse_vocabulary(text)  # refused at its line before anything is asked of the store
    current = store.get_vocabulary(args.tenant, args.agent)
    if current is None:
        _existing(store, args.tenant, args.agent)
    stored, vocabulary = store.put_vocabulary(args.tenant, args.agent, text, actor=f"operator:{who}",
                                              if_match=current.etag if current is not None else None)
    print(f"saved vocabulary.yaml of {args.tenant}/{args.agent}: {len(vocabulary.readings)} readings ({stored.etag})")
    return 0


def import_file(files: list, tenant: str, agent: str, store: Any, *, actor: str, replace: bool,
                dry_run: bool) -> tuple[list, str | None]:
    """An export folder's vocabulary.yaml (files are (name, bytes) pairs), saved to the agent:
    created when it has none, overwritten only with `replace`. Returns the other files and what
    was done with it (None when the folder holds none)."""
    kept = [(name, data) for name, data in files if Path(name).name != "vocabulary.yaml"]
    found = [data for name, data in files if Path(name).name == "vocabulary.yaml"]
    if not found or isinstance(found[0], int):
        return kept, None if not found else "vocabulary.yaml refused: too large"
    try:
        vocabulary = parse_vocabulary(found[0])
    except InvalidVocabulary as exc:  # reported like a refused row; the concepts go on
        return kept, f"vocabulary.yaml refused: {exc}"
    current = store.get_vocabulary(tenant, agent)
    if current is None:
        _existing(store, tenant, agent)
    if current is not None and current.data == found[0]:
        return kept, "vocabulary.yaml skipped: the agent's says the same"
    if current is not None and not replace:
        return kept, "vocabulary.yaml kept: the agent has its own (--replace to overwrite it)"
    if dry_run:
        return kept, f"vocabulary.yaml would be saved: {len(vocabulary.readings)} readings"
    store.put_vocabulary(tenant, agent, found[0].decode("utf-8"), actor=actor,
                         if_match=current.etag if current is not None else None)
    return kept, f"vocabulary.yaml saved: {len(vocabulary.readings)} readings"


def _existing(store: Any, tenant: str, agent: str) -> None:
    """A vocabulary is never what brings an agent into being (a mistyped --agent would)."""
    if not store.agent_exists(tenant, agent):
        raise UnknownAgent(f"there is no agent {agent!r} in tenant {tenant!r}: it has neither a knowledge.yaml "
                           "nor any concept (check the agent's name, or save its knowledge.yaml first)")
