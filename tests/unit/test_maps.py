"""The maps a newcomer reads kept true: docs/development.md names every Python module of ours under
its folder, docs/evaluation.md every script, each on one line (a table row that starts with the path
in backticks). A module with no line fails with the line to add; a line whose module is gone fails
too. Beside them: the sizes the docs promise (README.md at most 15 KB, the unit count tests/README.md
states)."""

from __future__ import annotations

import ast
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers.paths import ROOT


@dataclass(frozen=True)
class Map:
    doc: str  # the map's file, from the repository's root
    section: str  # the `## ` heading its lines are under
    # each folder walked, and what its modules' paths are written from: the folder on the import path
    # (knowledge/recall/words.py), or the repository's root (functions/extract/app.py)
    roots: tuple[tuple[str, str], ...]


ROOMS = Map("docs/development.md", "The rooms", (
    ("layers/core", ""), ("cli", ""), ("devstack", ""), ("clients/python", ""), ("functions", "functions/")))
SCRIPTS = Map("docs/evaluation.md", "The scripts", (("scripts", ""),))
ENTRY = re.compile(r"^\|\s*`([^`\s]+\.py)`\s*\|(.*)")


def is_module(path: Path) -> bool:
    """An `__init__.py` is its package's docstring and re-exports unless it defines something."""
    if path.name != "__init__.py":
        return True
    return any(isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
               for node in ast.parse(path.read_text()).body)


def modules(root: Path, chart: Map) -> set[str]:
    found = set()
    for folder, written_from in chart.roots:
        for path in (root / folder).rglob("*.py"):
            parts = path.relative_to(root / folder).parts
            if not {"__pycache__", "node_modules", ".aws-sam"} & set(parts) and is_module(path):
                found.add(written_from + "/".join(parts))
    return found


def entries(root: Path, chart: Map) -> tuple[dict[str, str], list[str], list[str]]:
    """The map's lines ({path: what it holds}), its folders' headings (`### `knowledge/recall/``), and
    the paths named more than once."""
    text = (root / chart.doc).read_text()
    section = text.split(f"\n## {chart.section}\n", 1)[1].split("\n## ", 1)[0]
    lines, folders, twice = {}, [], []
    for line in section.splitlines():
        if heading := re.match(r"^###+ `([^`]+/)`", line):
            folders.append(heading[1])
        elif entry := ENTRY.match(line):
            if entry[1] in lines:
                twice.append(entry[1])
            lines[entry[1]] = entry[2].split("|")[0].strip()
    return lines, folders, twice


def where(path: str, folders: list[str], chart: Map) -> str:
    """The heading a new line goes under: the deepest folder heading that holds the path."""
    holding = [folder for folder in folders if path.startswith(folder)]
    return f"'### `{max(holding, key=len)}`'" if holding else f"'## {chart.section}'"


def drift(root: Path, chart: Map) -> list[str]:
    lines, folders, twice = entries(root, chart)
    there = modules(root, chart)
    told = [f"{chart.doc}: add a line for `{path}` under {where(path, folders, chart)}: "
            f"| `{path}` | <what it holds, in a few words> |" for path in sorted(there - lines.keys())]
    told += [f"{chart.doc}: the line for `{path}` names a file that is not there: remove it, or correct "
             "its path" for path in sorted(lines.keys() - there)]
    told += [f"{chart.doc}: `{path}` has two lines: keep one" for path in twice]
    told += [f"{chart.doc}: the line for `{path}` says nothing: say what it holds"
             for path, said in sorted(lines.items()) if not said]
    return told


def test_the_room_map_names_every_module_of_ours_once():
    assert drift(ROOT, ROOMS) == []


def test_the_evaluation_page_names_every_script_once():
    assert drift(ROOT, SCRIPTS) == []


@pytest.fixture
def copy_of_the_maps(tmp_path):
    """The maps and what they map, copied where a module can come and go."""
    for doc in (ROOMS.doc, SCRIPTS.doc):
        (tmp_path / doc).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / doc, tmp_path / doc)
    for folder, _ in ROOMS.roots + SCRIPTS.roots:
        shutil.copytree(ROOT / folder, tmp_path / folder, ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path


def test_a_new_module_is_named_with_the_line_to_add_under_its_folder(copy_of_the_maps):
    (copy_of_the_maps / "layers/core/knowledge/recall/tokens.py").write_text('"""Tokens."""\n')
    (copy_of_the_maps / "devstack/knowledge_dev/faults/latency.py").write_text('"""Latency."""\n')
    (copy_of_the_maps / "scripts/tools").mkdir()
    (copy_of_the_maps / "scripts/tools/timing.py").write_text('"""Timing."""\n')
    # a package of re-exports is no module to map; one that defines something is
    (copy_of_the_maps / "scripts/tools/__init__.py").write_text("from .timing import *  # noqa\n")
    (copy_of_the_maps / "layers/core/knowledge/tiers/").mkdir()
    (copy_of_the_maps / "layers/core/knowledge/tiers/__init__.py").write_text("def tier():\n    pass\n")
    assert drift(copy_of_the_maps, ROOMS) == [
        "docs/development.md: add a line for `knowledge/recall/tokens.py` under '### `knowledge/recall/`': "
        "| `knowledge/recall/tokens.py` | <what it holds, in a few words> |",
        "docs/development.md: add a line for `knowledge/tiers/__init__.py` under '### `knowledge/`': "
        "| `knowledge/tiers/__init__.py` | <what it holds, in a few words> |",
        "docs/development.md: add a line for `knowledge_dev/faults/latency.py` under '### `knowledge_dev/`': "
        "| `knowledge_dev/faults/latency.py` | <what it holds, in a few words> |",
    ]
    assert drift(copy_of_the_maps, SCRIPTS) == [
        "docs/evaluation.md: add a line for `tools/timing.py` under '## The scripts': "
        "| `tools/timing.py` | <what it holds, in a few words> |",
    ]


def test_a_line_for_a_module_that_moved_is_named_to_remove(copy_of_the_maps):
    (copy_of_the_maps / "functions/studio_api/routing.py").unlink()
    (copy_of_the_maps / "scripts/reports/echo.py").rename(copy_of_the_maps / "scripts/reports/echo_report.py")
    assert drift(copy_of_the_maps, ROOMS) == [
        "docs/development.md: the line for `functions/studio_api/routing.py` names a file that is not "
        "there: remove it, or correct its path"]
    assert drift(copy_of_the_maps, SCRIPTS) == [
        "docs/evaluation.md: add a line for `reports/echo_report.py` under '### `reports/`': "
        "| `reports/echo_report.py` | <what it holds, in a few words> |",
        "docs/evaluation.md: the line for `reports/echo.py` names a file that is not there: remove it, "
        "or correct its path"]


def test_the_readme_stays_within_15_kb():
    assert (ROOT / "README.md").stat().st_size <= 15_000


def test_the_unit_count_in_the_tests_readme_is_within_a_tenth_of_the_tier(request):
    """Counted from the run itself, so only a run of the whole unit tier (./run test, ./run test-fast)
    can say: a run of a few files or with -k counts fewer."""
    unit = ROOT / "tests" / "unit"
    ran = [item for item in request.session.items if unit in Path(item.path).parents]
    if {Path(item.path) for item in ran} != set(unit.rglob("test_*.py")):
        pytest.skip("counted only when the whole unit tier runs")
    stated = re.search(r"([\d,]+) tests in about", (ROOT / "tests" / "README.md").read_text())
    assert stated, "tests/README.md no longer says 'N tests in about ...'"
    assert abs(int(stated[1].replace(",", "")) - len(ran)) <= len(ran) / 10, (
        f"tests/README.md: the unit tier has {len(ran)} tests; say so")
