"""The studio pages' modules (docs/development.md, "The studio pages' modules"): no import cycle
among them (`studio_web/import-cycles.mjs`, which `./run lint-imports` runs beside the Python
contract, and which breaks on a cycle added to a copy), the page's state in `state.js` alone, and
the docs' module map naming every module there is."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest
from helpers.paths import ROOT
from helpers.skips import skip_unless_present

NODE = shutil.which("node")
SRC = ROOT / "studio_web" / "src"
CHECK = ROOT / "studio_web" / "import-cycles.mjs"
pytestmark = skip_unless_present({"node (npm builds the page with it)": NODE is not None})


def modules() -> list[str]:
    return sorted(path.name for path in SRC.iterdir() if path.suffix in (".js", ".mjs"))


def check(folder) -> subprocess.CompletedProcess:
    return subprocess.run([NODE, str(CHECK), str(folder)], capture_output=True, text=True, timeout=60)


def test_the_studio_pages_modules_import_each_other_in_no_cycle():
    done = check(SRC)
    assert done.returncode == 0, done.stderr
    assert f"no import cycle among the {len(modules())} modules" in done.stdout


@pytest.fixture
def copy_of_the_page(tmp_path):
    copy = tmp_path / "src"
    shutil.copytree(SRC, copy)
    return copy


# One arrow each, in each way a module writes an import: a one-line import, one over several lines,
# a re-export; and an import of a module that is not there.
@pytest.mark.parametrize("module, arrow, said", [
    ("editor.js", 'import { loadList } from "./list.js";', "import cycle: editor.js -> list.js -> editor.js"),
    ("review.js", 'import {\n  refreshList,\n  counted,\n} from "./list.js";',
     "import cycle: list.js -> review.js -> list.js"),
    ("state.js", 'export { say } from "./status.js";', "import cycle: state.js -> status.js -> state.js"),
    ("dom.js", 'import "./facts.js";', "import cycle: dom.js -> facts.js -> dom.js"),
    ("url.js", 'import { gone } from "./gone.js";', "url.js imports ./gone.js, which is not there"),
])
def test_the_check_fails_on_an_arrow_that_closes_a_cycle(copy_of_the_page, module, arrow, said):
    target = copy_of_the_page / module
    target.write_text(f"{arrow}\n{target.read_text()}")
    broken = check(copy_of_the_page)
    assert broken.returncode == 1
    assert said in broken.stderr.splitlines()


def test_an_import_quoted_in_a_comment_or_a_string_is_no_arrow(copy_of_the_page):
    target = copy_of_the_page / "dom.js"
    target.write_text(target.read_text() + '\n// import { loadList } from "./list.js";\n'
                      'export const EXAMPLE = `import { openConcept } from "./editor.js"`;\n')
    assert check(copy_of_the_page).returncode == 0


def test_the_page_keeps_its_state_in_state_js_alone():
    # A module-level `let` (or `var`) is state between two events: state.js holds it for the page.
    elsewhere = {name: lines for name in modules() if name != "state.js"
                 if (lines := [line for line in (SRC / name).read_text().splitlines()
                               if re.match(r"(export )?(let|var) ", line)])}
    assert elsewhere == {}


def test_the_development_guide_maps_every_module_of_the_pages():
    guide = (ROOT / "docs" / "development.md").read_text()
    section = guide.split("## The studio pages' modules", 1)[1].split("\n## ", 1)[0]
    named = set(re.findall(r"`([\w-]+\.m?js)`", section))
    assert named >= set(modules()), sorted(set(modules()) - named)
    assert named - {"import-cycles.mjs"} <= set(modules()), sorted(named - set(modules()))
