"""The `knowledge` command: export (and, as they land, the other operator commands)."""

from __future__ import annotations

import argparse
import sys
from typing import Optional, Sequence, TextIO

from botocore.exceptions import BotoCoreError

from .errors import KnowledgeError
from .export import FORMATS, DirectorySink, export_agent
from .names import check_slug


class ProgressBar:
    """A one-line bar on a terminal; silent when stderr is not one."""

    def __init__(self, label: str, stream: TextIO = sys.stderr, width: int = 30):
        self.label, self.stream, self.width = label, stream, width
        self.enabled = stream.isatty()

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled or total <= 0:
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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="knowledge", description="Operate an agent's learned knowledge.")
    commands = parser.add_subparsers(dest="command", required=True)

    export = commands.add_parser("export", help="write an agent's concepts to a folder")
    export.add_argument("--agent", required=True, type=_slug("agent"))
    export.add_argument("--tenant", default="default", type=_slug("tenant"))
    export.add_argument("--out", required=True, help="folder to write into (created if missing)")
    export.add_argument("--format", default="md", choices=FORMATS,
                        help="md: one <name>.md per concept, byte for byte; graphml: one knowledge.graphml")
    export.set_defaults(run=_export)
    return parser


def _store():
    from .aws import client
    from .settings import Settings
    from .store import ConceptStore

    return ConceptStore(client("s3"), Settings.from_env().knowledge_bucket)


def _export(args: argparse.Namespace) -> int:
    sink = DirectorySink(args.out)
    result = export_agent(_store(), args.tenant, args.agent, sink, fmt=args.format,
                          progress=ProgressBar("exporting"))
    print(f"{result.summary()} in {args.out}")
    for name, why in result.skipped.items():
        print(f"skipped {name}: {why}", file=sys.stderr)
    return 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except KnowledgeError as exc:
        print(f"knowledge {args.command}: {exc}", file=sys.stderr)
        return 1
    except BotoCoreError as exc:
        print(f"knowledge {args.command}: cannot reach AWS: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
