"""`./run knowledge --help` lists every command it runs, one line each, whether or not the local stack runs."""

from __future__ import annotations

import re

import pytest

from knowledge_cli.main import build_parser
from knowledge_dev import client


def _commands(text: str) -> dict[str, str]:
    listed = text.split("commands (", 1)[1]
    return dict(re.findall(r"^    (\S+) +(\S.*)$", listed, flags=re.MULTILINE))


def _cli_commands(capsys) -> set[str]:
    """Every command the CLI's parser runs, as it names them to whoever mistypes one (a command
    without a help line too)."""
    with pytest.raises(SystemExit):
        build_parser().parse_args(["no-such-command"])
    choices = re.search(r"invalid choice: .*\(choose from (.*)\)", capsys.readouterr().err).group(1)
    return {name.strip("' ") for name in choices.split(",")}


@pytest.mark.parametrize("argv", [["--help"], ["-h"]])
def test_help_lists_every_command_once_on_one_line_without_the_stack(argv, capsys, tmp_path, monkeypatch):
    monkeypatch.setattr(client, "STATE_FILE", tmp_path / "no-stack.json")  # nothing runs locally
    assert client.main(argv) == 0
    out = capsys.readouterr().out
    listed = _commands(out)
    cli = _cli_commands(capsys)
    local = {"retrieve", "load", "save", "save-status", "memory", "remember", "distill-now", "send-conversation", "facts"}
    assert set(listed) == cli | local and cli >= {"export", "import", "backfill", "history", "show", "redrive",
                                                  "forget-customer", "delete-tenant-data", "send-turn"}
    assert all(line.strip() for line in listed.values())  # each with its one line, beside its name
    assert "not running" not in out


def test_no_command_prints_the_same_list_and_fails(capsys, tmp_path, monkeypatch):
    monkeypatch.setattr(client, "STATE_FILE", tmp_path / "no-stack.json")
    assert client.main([]) == 2
    assert "send-conversation" in _commands(capsys.readouterr().out)
