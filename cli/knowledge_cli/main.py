"""The `knowledge` command: export, import, check-names, repair-related, backfill, history, show, redrive,
send-turn, vocabulary, words and the LGPD purges."""

from __future__ import annotations

import argparse
import sys
from typing import Optional, Sequence, TextIO

from botocore.exceptions import BotoCoreError

from knowledge.curation.export import FORMATS, DirectorySink, export_agent
from knowledge.format.concept import TYPES
from knowledge_cli import reads, vocabulary, words
from shared.errors import KnowledgeError
from shared.httpapi import OPERATOR_ID
from shared.names import check_slug, is_session_id


class ProgressBar:
    """A one-line bar on a terminal; silent when stderr is not one, unless `every` asks for a line of
    counts each `every` items there (a long import run from a script)."""

    def __init__(self, label: str, stream: Optional[TextIO] = None, width: int = 30, every: Optional[int] = None):
        # stderr as it is when the bar is made (a default bound at import keeps a stream replaced since)
        self.label, self.stream, self.width, self.every = label, stream or sys.stderr, width, every
        self.enabled = self.stream.isatty()

    def __call__(self, done: int, total: int) -> None:
        if total <= 0:
            return
        if not self.enabled:
            if self.every and done and (done % self.every == 0 or done == total):
                self.stream.write(f"{self.label} {done}/{total}\n")
                self.stream.flush()
            return
        filled = self.width * done // total
        self.stream.write(f"\r{self.label} [{'#' * filled}{'.' * (self.width - filled)}] {done}/{total}")
        if done >= total:
            self.stream.write("\n")
        self.stream.flush()


def _slug(field: str):
    def convert(value: str) -> str:
        try:
            return check_slug(field, value)
        except KnowledgeError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return convert


def _operator(value: str) -> str:
    if not OPERATOR_ID.fullmatch(value):
        raise argparse.ArgumentTypeError("letters, digits, '.', '_', '@', '+', ':', '-'; at most 128")
    return value


def _customer(value: str) -> str:
    if not is_session_id(value):
        raise argparse.ArgumentTypeError("letters, digits, '.', '_', ':', '-'; at most 128")
    return value


def _positive(value: str) -> int:
    if not value.isdigit() or int(value) < 1:
        raise argparse.ArgumentTypeError("must be a whole number of at least 1")
    return int(value)


# The queue a `knowledge redrive` argument names: (its dead-letter queue's setting, its own setting).
REDRIVE_QUEUES = {"turns": ("TURN_DLQ_URL", "TURN_QUEUE_URL"),
                  "candidates": ("CANDIDATES_DLQ_URL", "CANDIDATES_QUEUE_URL")}


class OneLineHelp(argparse.HelpFormatter):
    """`knowledge --help`: every command on one line, never wrapped into a column (a terminal wraps it)."""

    def __init__(self, prog: str):
        super().__init__(prog, max_help_position=30, width=10_000)

    def add_argument(self, action: argparse.Action) -> None:
        super().add_argument(action)
        # argparse measures a command's name at its section's indent, not at its own one step deeper,
        # so the longest names would go on a line of their own.
        for command in getattr(action, "_choices_actions", ()):
            self._action_max_length = max(self._action_max_length, len(command.dest) + self._current_indent
                                          + 2 * self._indent_increment)


def _scope_arguments(parser: argparse.ArgumentParser) -> None:
    """--agent A, or --shared: the tenant's shared concepts (recalled by its agents with `shared: true`)."""
    scope = parser.add_mutually_exclusive_group(required=True)
    scope.add_argument("--agent", type=_slug("agent"))
    scope.add_argument("--shared", action="store_true",
                       help="the tenant's shared concepts, recalled by every agent with `knowledge: shared: true`")
    parser.add_argument("--tenant", default="default", type=_slug("tenant"))


def _scope(args: argparse.Namespace) -> str:
    from knowledge.store.keys import SHARED

    return SHARED if args.shared else args.agent


def build_parser(also: Sequence[tuple[str, str]] = ()) -> argparse.ArgumentParser:
    """The command's parser. `also`: (command, one line) the caller runs itself (the local stack's own
    commands, knowledge_dev.client), listed in the help beside these."""
    parser = argparse.ArgumentParser(prog="knowledge", description="Operate an agent's learned knowledge.",
                                     formatter_class=OneLineHelp)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND",
                                     title="commands (`knowledge COMMAND --help` for one's options)")

    export = commands.add_parser("export", help="write an agent's concepts to a folder")
    _scope_arguments(export)
    export.add_argument("--out", required=True, help="folder to write into (created if missing)")
    export.add_argument("--format", default="md", choices=FORMATS,
                        help="md: one <name>.md per concept, byte for byte; graphml: one knowledge.graphml")
    export.set_defaults(run=_export)

    bring = commands.add_parser(
        "import", help="import concept files (an export, or one .md) or an FAQ (.csv, .yaml) into an agent")
    _scope_arguments(bring)
    bring.add_argument("--operator", type=_operator, default=None,
                       help="who imports: the versions' actor is operator:<id> (default: $KNOWLEDGE_OPERATOR, "
                            "else your login name)")
    bring.add_argument("--dry-run", action="store_true", help="print what would be created, changed or skipped")
    bring.add_argument("--replace", action="store_true",
                       help="write a new, restorable version of a concept whose name exists and says otherwise")
    bring.add_argument("--provenance", default="policy", choices=("policy", "observed", "file"),
                       help="of every imported concept (default policy: a human chose them); file: as each .md says")
    bring.add_argument("--type", default="fact", choices=TYPES, help="of an FAQ row without a type column")
    bring.add_argument("path", help="a folder (its .md, .csv, .yaml, .yml files), or one such file")
    bring.set_defaults(run=_import)

    names = commands.add_parser(
        "check-names", help="list the concepts stored under a name that carries personal data, to rename (read-only)")
    _scope_arguments(names)
    names.set_defaults(run=_check_names)

    repair = commands.add_parser(
        "repair-related", help="move the engine's unjudged entries out of the concepts into their waiting pairs")
    _scope_arguments(repair)
    repair.add_argument("--dry-run", action="store_true", help="print what would move; write nothing")
    repair.set_defaults(run=_repair_related)

    replay = commands.add_parser("backfill", help="replay an agent's archived turns through the extractor")
    replay.add_argument("--agent", required=True, type=_slug("agent"))
    replay.add_argument("--tenant", default="default", type=_slug("tenant"))
    replay.add_argument("--since", required=True, help="ISO 8601, e.g. 2026-08-01T00:00:00Z")
    replay.add_argument("--until", help="ISO 8601; default: now")
    replay.add_argument("--from-export", metavar="S3_URL",
                        help="replay the engine's session exports under s3://bucket/prefix/ (one turn-complete "
                             "JSON message per line; .gz objects are gunzipped) instead of this stack's archive")
    replay.add_argument("--dry-run", action="store_true",
                        help="count the model calls and estimate the tokens; ask no model and send nothing")
    replay.set_defaults(run=_backfill)

    reads.add_commands(commands, _slug, _positive)

    history = commands.add_parser("history", help="list a concept's versions: when, who, why")
    _scope_arguments(history)
    history.add_argument("name", type=_slug("name"))
    history.set_defaults(run=_history)

    show = commands.add_parser("show", help="print a concept's markdown (or one version of it)")
    _scope_arguments(show)
    show.add_argument("--version", help="a version id from `knowledge history`")
    show.add_argument("name", type=_slug("name"))
    show.set_defaults(run=_show)

    redrive = commands.add_parser(
        "redrive", help="move a dead-letter queue's messages back to their source queue (valid bodies only)")
    redrive.add_argument("queue", choices=sorted(REDRIVE_QUEUES),
                         help="turns: TURN_DLQ_URL to TURN_QUEUE_URL; candidates: CANDIDATES_DLQ_URL to "
                              "CANDIDATES_QUEUE_URL")
    redrive.add_argument("--dry-run", action="store_true",
                         help="summarise what is there by reason, and move nothing")
    redrive.add_argument("--max", type=_positive, help="look at no more than this many messages")
    redrive.add_argument("--dlq", help="the dead-letter queue's URL (default: from the environment)")
    redrive.add_argument("--to", help="the source queue's URL (default: from the environment)")
    redrive.set_defaults(run=_redrive)

    forget = commands.add_parser(
        "forget-customer", help="purge one customer (LGPD): proposals, memory cell and latches, sessions and "
                                "their archived turns, every version and delete marker")
    forget.add_argument("--tenant", required=True, type=_slug("tenant"))
    forget.add_argument("--customer", required=True, type=_customer, help="the engine's customer_id")
    forget.add_argument("--dry-run", action="store_true", help="count what would go, and remove nothing")
    forget.set_defaults(run=_forget_customer)

    wipe = commands.add_parser(
        "delete-tenant-data", help="purge everything of a tenant in both buckets, every version and delete marker")
    wipe.add_argument("--tenant", required=True, type=_slug("tenant"))
    wipe.add_argument("--confirm", required=True, metavar="TENANT",
                      help="the tenant's name typed again, so a typo cannot wipe another tenant")
    wipe.add_argument("--dry-run", action="store_true", help="count what would go, and remove nothing")
    wipe.set_defaults(run=_delete_tenant_data)

    send = commands.add_parser("send-turn", help="send a turn-complete message (JSON file) to the TurnCompleteQueue")
    send.add_argument("file", help="a JSON file in the turn-complete format (see schemas/)")
    send.add_argument("--keep-time", action="store_true",
                      help="send the file's completed_at as it is (default: stamped with the current time, so "
                           "the turn is within save_knowledge's 24-hour window)")
    send.set_defaults(run=_send_turn)
    vocabulary.add_commands(commands, _slug, _operator, _store)
    words.add_commands(commands, _slug)
    for name, line in also:
        commands.add_parser(name, help=line, add_help=False)
    return parser


def _store():
    from knowledge.store.concepts import ConceptStore
    from shared.aws import client
    from shared.settings import Settings

    return ConceptStore(client("s3"), Settings.from_env().knowledge_bucket)


def _export(args: argparse.Namespace) -> int:
    sink = DirectorySink(args.out)
    result = export_agent(_store(), args.tenant, _scope(args), sink, fmt=args.format,
                          progress=ProgressBar("exporting"))
    print(f"{result.summary()} in {args.out}")
    for name, why in result.skipped.items():
        print(f"skipped {name}: {why}", file=sys.stderr)
    return 0


def _import(args: argparse.Namespace) -> int:
    import getpass
    import os

    from knowledge import wiring
    from knowledge.curation.imports import items_of, local_files
    from shared.httpapi import Operator
    from shared.settings import Settings

    operator = args.operator or os.environ.get("KNOWLEDGE_OPERATOR") or getpass.getuser()
    if not OPERATOR_ID.fullmatch(operator):
        raise KnowledgeError("say who imports with --operator (letters, digits, '.', '_', '@', '+', ':', '-')")
    if args.shared and any(name == "vocabulary.yaml" for name, _ in local_files(args.path)):
        raise KnowledgeError("the shared scope has no vocabulary.yaml: import it into each agent (--agent A)")
    files, vocabulary_done = vocabulary.import_file(local_files(args.path), args.tenant, _scope(args), _store(),
                                                    actor=f"operator:{operator}", replace=args.replace,
                                                    dry_run=args.dry_run)
    items, ignored = items_of(files, default_type=args.type)
    report = wiring.concept_import(Settings.from_env()).run(
        Operator(operator, frozenset({args.tenant})), args.tenant, _scope(args), items, dry_run=args.dry_run,
        replace=args.replace, provenance=args.provenance, progress=ProgressBar("importing", every=500), ignored=ignored)
    verbs = {"created": "would create", "changed": "would change", "skipped": "would skip"} if args.dry_run else {}
    for item in report.outcomes:
        where = f"{item.source}:{item.line}" if item.line else item.source
        line = f"{verbs.get(item.outcome, item.outcome):<12} {item.name or '-':<40} {where}"
        print(line + (f"  {item.reason}" if item.reason else ""),
              file=sys.stderr if item.outcome == "refused" else sys.stdout)
    if vocabulary_done:
        print(vocabulary_done)
    print(f"{report.summary()} ({args.tenant}/{'shared' if args.shared else args.agent})")
    return 1 if report.refused else 0


def _check_names(args: argparse.Namespace) -> int:
    from knowledge.curation.name_check import check_names

    where = f"{args.tenant}/{'shared' if args.shared else args.agent}"
    result = check_names(_store(), args.tenant, _scope(args))
    for found in result.to_rename:
        print(f"{found.name:<64} holds {found.holds}")
    if not result.to_rename:
        print(f"check-names: none of the {result.checked} concept names of {where} carries personal data")
        return 0
    print(f"check-names: {len(result.to_rename)} of {result.checked} concept names of {where} carry personal data: "
          "rename each (create it under a name that says what it is, then delete this one)", file=sys.stderr)
    return 1


def _repair_related(args: argparse.Namespace) -> int:
    from knowledge.operation.repair import repair_related

    where = f"{args.tenant}/{'shared' if args.shared else args.agent}"
    repair = repair_related(_store(), args.tenant, _scope(args), dry_run=args.dry_run)
    verb = "would move" if args.dry_run else "moved"
    for name, entries in sorted(repair.moved.items()):
        print(f"{name:<64} {verb} {entries} unjudged entr{'y' if entries == 1 else 'ies'} to its waiting pairs")
    for name, entries in sorted(repair.left.items()):
        print(f"{name:<64} left {entries} (the agent whose turn it came from is no longer in its history)")
    for name in repair.contended:
        print(f"{name:<64} written meanwhile: run again", file=sys.stderr)
    print(f"repair-related: {sum(repair.moved.values())} entries of {len(repair.moved)} of {repair.checked} concepts "
          f"of {where} {verb}" + (" (dry run: nothing written)" if args.dry_run else ""))
    return 1 if repair.contended else 0


def _known(store, args: argparse.Namespace):
    """The store, once the agent is known: a mistyped agent is `unknown_agent`, not a missing concept."""
    from knowledge.store.agents import unknown_agent

    if not store.agent_exists(args.tenant, _scope(args)):
        raise unknown_agent(args.tenant, _scope(args), "check the tenant and the agent's name")
    return store


def _history(args: argparse.Namespace) -> int:
    for version in _known(_store(), args).versions(args.tenant, _scope(args), args.name):
        when = version.time.strftime("%Y-%m-%d %H:%M:%S")
        state = "deleted" if version.deleted else f"{version.size} bytes"
        current = "  (current)" if version.latest else ""
        print(f"{when}  {version.reason or '?':<13} {version.actor or '?':<24} {state:<12} {version.version_id}{current}")
    return 0


def _show(args: argparse.Namespace) -> int:
    store = _known(_store(), args)
    stored = (store.read_version(args.tenant, _scope(args), args.name, args.version) if args.version
              else store.get(args.tenant, _scope(args), args.name))
    sys.stdout.write(stored.text)
    return 0


def _backfill(args: argparse.Namespace) -> int:
    from facts.sessions import SessionStates
    from knowledge import wiring
    from knowledge.learning.usage import daily_cap
    from knowledge.operation.backfill import backfill, parse_backfill_request
    from knowledge.store.archive import expiry_days
    from knowledge.store.session_export import SessionExport
    from shared.aws import client
    from shared.settings import Settings

    request = parse_backfill_request({"tenant": args.tenant, "agent": args.agent, "since": args.since,
                                      "until": args.until, "dry_run": args.dry_run,
                                      "from_export": args.from_export})
    settings = Settings.from_env(require=("SESSIONS_BUCKET", "CANDIDATES_QUEUE_URL"))
    extractor = wiring.extractor(settings)
    extractor.quota = daily_cap(client("s3"), settings.sessions_bucket)
    export = SessionExport(client("s3"), request.export) if request.export else None
    retention = expiry_days(client("s3"), settings.sessions_bucket) if export else None
    report = backfill(extractor, wiring.turn_archive(settings), request.tenant, request.agent,
                      request.since, request.until, dry_run=request.dry_run, export=export,
                      retention_days=retention, progress=ProgressBar("replaying"),
                      sessions=SessionStates(client("s3"), settings.sessions_bucket))
    print(report.summary(request.dry_run, extractor.quota.limit if extractor.quota else None))
    return 0 if report.failed == 0 and report.complete else 1


def _redrive(args: argparse.Namespace) -> int:
    import os

    from knowledge.errors import RedriveError
    from knowledge.operation.redrive import VALID, Redrive, check_sighting, check_turn, logs_query, queue_name
    from shared.aws import client

    dlq_setting, source_setting = REDRIVE_QUEUES[args.queue]
    dlq, source = args.dlq or os.environ.get(dlq_setting), args.to or os.environ.get(source_setting)
    missing = ([] if dlq else [f"--dlq or {dlq_setting}"]) + ([] if source else [f"--to or {source_setting}"])
    if missing:
        raise RedriveError(f"say which queues: {' and '.join(missing)}")
    check = check_turn if args.queue == "turns" else check_sighting
    mover = Redrive(client("sqs"), dlq, source, check)
    report = mover.run(dry_run=args.dry_run, limit=args.max, progress=ProgressBar("redriving"))
    print(_redrive_summary(report, queue_name(dlq), queue_name(source), args.dry_run, VALID))
    valid_ids = report.ids.get(VALID, [])
    if valid_ids and args.dry_run:
        print(f"find why they failed (CloudWatch Logs Insights, the consumer's log group):\n  "
              f"{logs_query(valid_ids[:50])}")
    return 0 if report.failed == 0 else 1


def _redrive_summary(report, dlq: str, source: str, dry_run: bool, valid: str) -> str:
    held = "" if report.approximate is None else f" (the queue said about {report.approximate})"
    lines = [f"{dlq} -> {source}: {report.seen} message(s) seen{held}"]
    verb = "would move" if dry_run else "moved"
    count = report.reasons.get(valid, 0) - report.too_recent if dry_run else report.moved
    lines.append(f"  {verb} {count}: valid bodies that failed while being processed")
    if report.too_recent:
        lines.append(f"  left {report.too_recent}: sent less than five minutes ago (the FIFO queue would drop "
                     "them as duplicates); run again in a few minutes")
    if report.failed:
        lines.append(f"  failed to move {report.failed}: the send or the delete was refused; run again")
    for reason, n in sorted(report.reasons.items()):
        if reason != valid:
            lines.append(f"  left {n}: {reason}, which can never be processed")
    for agent, n in sorted(report.agents.items()):
        lines.append(f"  agent {agent}: {n} valid")
    for reason, ids in sorted(report.ids.items()):
        shown = ", ".join(ids[:20]) + (f" and {len(ids) - 20} more" if len(ids) > 20 else "")
        lines.append(f"  ids ({reason}): {shown}")
    return "\n".join(lines)


def _purge_settings():
    from shared.aws import client
    from shared.settings import Settings

    settings = Settings.from_env(require=("SESSIONS_BUCKET",))
    return client("s3"), dict(knowledge_bucket=settings.knowledge_bucket, sessions_bucket=settings.sessions_bucket)


def _forget_customer(args: argparse.Namespace) -> int:
    # The command line is an entry point, like a handler: it may wire Facts' part in.
    from facts.purge import forget_customer
    from knowledge import wiring
    from shared.settings import Settings

    s3, buckets = _purge_settings()
    share = wiring.customer_share(Settings.from_env(require=("SESSIONS_BUCKET",)))  # the dead letters, when set
    report = forget_customer(s3, **buckets, tenant=args.tenant, customer_id=args.customer, dry_run=args.dry_run,
                             parts=(share,))
    print(report.summary(f"forget-customer (tenant {args.tenant})"))
    return 0 if report.complete else 1


def _delete_tenant_data(args: argparse.Namespace) -> int:
    from facts.purge import TENANT_PART
    from knowledge.operation.purge import check_confirmed, delete_tenant_data

    check_confirmed(args.tenant, args.confirm)  # before any setting is read or request sent
    s3, buckets = _purge_settings()
    report = delete_tenant_data(s3, **buckets, tenant=args.tenant, confirm=args.confirm, parts=(TENANT_PART,),
                                dry_run=args.dry_run)
    print(report.summary(f"delete-tenant-data (tenant {args.tenant})"))
    return 0 if report.complete else 1


def _send_turn(args: argparse.Namespace) -> int:
    from pathlib import Path

    from knowledge.format.turn import parse_turn
    from shared.aws import client
    from shared.settings import Settings

    try:
        body = Path(args.file).read_bytes()
    except OSError as exc:
        raise KnowledgeError(f"cannot read {args.file}: {exc.strerror}") from None
    turn = parse_turn(body)
    if not args.keep_time:  # a sample file's fixed date would put the turn outside every window
        import json
        from datetime import datetime, timezone

        data = json.loads(body)
        data["completed_at"] = datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")
        body = json.dumps(data, ensure_ascii=False).encode("utf-8")
        turn = parse_turn(body)
    settings = Settings.from_env(require=("TURN_QUEUE_URL",))
    answer = client("sqs").send_message(QueueUrl=settings.turn_queue_url, MessageBody=body.decode("utf-8"))
    print(f"sent turn {turn.turn_id} of session {turn.session_id} ({turn.tenant}/{turn.agent}), completed_at "
          f"{turn.completed_at.strftime('%Y-%m-%dT%H:%M:%SZ')}; message {answer['MessageId']}")
    return 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except KnowledgeError as exc:
        print(f"knowledge {args.command}: {exc} ({exc.code})", file=sys.stderr)
        return 1
    except BotoCoreError as exc:
        print(f"knowledge {args.command}: cannot reach AWS: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
