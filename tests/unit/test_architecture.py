"""The layout's rules that import-linter cannot see (docs/development.md, "The import contract"):
handlers are not a package, private names are a convention, cycles and the build's package list
are not contracts. The contract itself runs in CI (`lint-imports`); one test here proves it bites."""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import grimp
import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parents[2]
OURS = ("knowledge", "facts", "shared", "knowledge_cli", "knowledge_dev")
PACKAGE_DIRS = {"knowledge": ROOT / "layers/core/knowledge", "facts": ROOT / "layers/core/facts",
                "shared": ROOT / "layers/core/shared", "knowledge_cli": ROOT / "cli/knowledge_cli",
                "knowledge_dev": ROOT / "devstack/knowledge_dev"}
# What a handler may import of ours: its loop's wiring (which builds its service from the environment)
# and errors, an HTTP API's requests and answers (their room's api_models), and the pieces of the Lambda
# runtime handlers share (the invocation's deadline, the queue consumer, the two HTTP APIs' answers).
HANDLER_IMPORTS = {"knowledge.wiring", "facts.wiring", "knowledge.errors", "facts.errors", "shared.errors",
                   "knowledge.curation.api_models", "facts.api_models", "shared.deadline", "shared.consumer",
                   "shared.httpapi"}
SOURCE_DIRS = ("layers", "cli", "functions", "devstack", "clients", "scripts", "tests")


def python_files(*dirs: str) -> list[Path]:
    return sorted(p for d in dirs for p in (ROOT / d).rglob("*.py") if "node_modules" not in p.parts)


def imported_modules(tree: ast.AST) -> list[tuple[int, str, str]]:
    """(line, module, name) of every absolute import of ours; name is '' for `import x`."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            for alias in node.names:
                found.append((node.lineno, node.module, alias.name))
        elif isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name, "") for alias in node.names)
    return [(line, module, name) for line, module, name in found if module.split(".")[0] in OURS]


def test_handlers_import_only_wiring_settings_and_errors():
    handlers = sorted((ROOT / "functions").glob("*/app.py"))
    assert len(handlers) == 15
    wrong = []
    for path in handlers:
        for line, module, name in imported_modules(ast.parse(path.read_text())):
            # `from knowledge import wiring` names the module knowledge.wiring
            target = f"{module}.{name}" if name and f"{module}.{name}" in HANDLER_IMPORTS else module
            if target not in HANDLER_IMPORTS:
                wrong.append(f"{path.relative_to(ROOT)}:{line}: {module} {name}".rstrip())
    assert wrong == []


def test_no_private_name_is_imported_from_another_module():
    wrong = []
    for path in python_files(*SOURCE_DIRS):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").split(".")[0] in OURS):
                wrong += [f"{path.relative_to(ROOT)}:{node.lineno}: {alias.name}" for alias in node.names
                          if alias.name.startswith("_") and not alias.name.startswith("__")]
    assert wrong == []


def test_the_packages_have_no_import_cycle():
    graph = grimp.build_graph(*OURS[:4], "knowledge_dev", exclude_type_checking_imports=True)
    arrows = nx.DiGraph()
    for module in graph.modules:
        for imported in graph.find_modules_directly_imported_by(module):
            if imported.split(".")[0] in OURS:
                arrows.add_edge(module, imported)
    assert arrows.number_of_edges() > 150
    assert list(nx.simple_cycles(arrows)) == []


def test_every_package_folder_is_in_the_build():
    """pyproject lists its packages by hand; a folder left out silently drops out of the install."""
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {".".join((top, *init.parent.relative_to(folder).parts))
             for top, folder in PACKAGE_DIRS.items() for init in folder.rglob("__init__.py")}
    assert found - listed == set()
    assert [name for name in listed if not PACKAGE_DIRS[name.split(".")[0]].joinpath(*name.split(".")[1:]).is_dir()] == []


def test_a_module_over_500_lines_says_why_at_its_top():
    """The limit docs/development.md states: past 500 lines a module is split, or says in its first 40
    lines ("Over 500 lines because ...") why it stays whole."""
    long = [path for path in python_files(*SOURCE_DIRS) if len(path.read_text().splitlines()) > 500]
    unexplained = [str(path.relative_to(ROOT)) for path in long
                   if not re.search(r"[Oo]ver 500 lines", "\n".join(path.read_text().splitlines()[:40]))]
    assert unexplained == []


def lint_imports(cwd: Path, *paths: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(str(p) for p in paths), "COLUMNS": "200"}
    command = [str(Path(sys.executable).parent / "lint-imports"), "--no-cache"]
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def copy_of_the_code(tmp_path_factory):
    """The four packages and the contract, copied where an arrow can be added without touching the tree."""
    where = tmp_path_factory.mktemp("contract")
    for top in OURS[:4]:
        shutil.copytree(PACKAGE_DIRS[top], where / top, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", where / "pyproject.toml")
    kept = lint_imports(where, where)
    assert kept.returncode == 0, kept.stdout
    return where


@pytest.mark.parametrize("module, arrow, contract", [
    ("knowledge/format/concept.py", "import facts.fact", "Knowledge never imports Facts"),
    ("knowledge/recall/index.py", "import boto3", "The domain is pure"),
    ("knowledge/store/archive.py", "import knowledge.learning.extract", "Knowledge's rooms"),
    ("facts/distill.py", "import knowledge.learning.consolidate", "Facts stands only on"),
    ("shared/names.py", "import knowledge.format.turn", "Entry points above the two loops"),
])
def test_the_import_contract_breaks_on_a_deliberate_wrong_arrow(copy_of_the_code, module, arrow, contract):
    target = copy_of_the_code / module
    original = target.read_text()
    try:
        target.write_text(original + f"\n{arrow}  # noqa\n")
        broken = lint_imports(copy_of_the_code, copy_of_the_code)
    finally:
        target.write_text(original)
    assert broken.returncode != 0
    assert re.search(rf"{re.escape(contract)}.* BROKEN", broken.stdout)


def test_a_test_loads_a_handler_with_the_variables_template_yaml_gives_it():
    # tests/helpers/handlers.load_handler(name, monkeypatch, stack, **overrides): the function's variables
    # come from template.yaml (function_env). A test that lists them by hand drifts from the template
    # unseen; only a test of a misconfigured function may, and says so on the line above.
    by_hand = []
    for path in python_files("tests"):
        source = path.read_text()
        if "load_handler" not in source:
            continue
        lines = source.splitlines()
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "load_handler" \
                    and len(node.args) < 3 and not any(k.arg == "stack" for k in node.keywords) \
                    and "misconfigured on purpose" not in lines[node.lineno - 2]:
                by_hand.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert by_hand == [], "give these load_handler calls the test's stack (or say why not): " + ", ".join(by_hand)
