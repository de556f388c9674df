"""Export: md byte for byte, GraphML read back by networkx, and the CLI's errors."""

from __future__ import annotations

import networkx as nx
import pytest
from helpers.concepts import make_concept
from helpers.paths import DEMO

from knowledge.curation.export import DirectorySink, export_agent
from knowledge.errors import NothingToExport, SinkError
from knowledge.format.concept import parse
from knowledge_cli.main import main
from shared.errors import UnknownAgent

T, A = "default", "store-support"


@pytest.fixture
def demo_store(store):
    for path in sorted(DEMO.glob("*.md")):
        store.create(T, A, parse(path.read_text(encoding="utf-8")), actor="engine")
    return store


def test_md_export_writes_each_concept_byte_for_byte(demo_store, tmp_path):
    result = export_agent(demo_store, T, A, DirectorySink(tmp_path), fmt="md")
    written = sorted(p.name for p in tmp_path.iterdir())
    assert written == sorted(p.name for p in DEMO.glob("*.md"))
    for path in DEMO.glob("*.md"):
        assert (tmp_path / path.name).read_bytes() == path.read_bytes()
    assert result.concepts == len(written)


def test_md_export_is_safe_to_rerun(demo_store, tmp_path):
    export_agent(demo_store, T, A, DirectorySink(tmp_path))
    first = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    export_agent(demo_store, T, A, DirectorySink(tmp_path))
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == first


def test_graphml_round_trips_through_networkx_with_hostile_text(store, tmp_path):
    hostile = 'Tom & Jerry <script>alert("x")</script> \'quotes\' ação 💡'
    store.create(T, A, make_concept("a-one", description=hostile, body="Links: [[b-two]], [[outside]], [[a-one]]."),
                 actor="engine")
    store.create(T, A, make_concept("b-two", type="policy", provenance="policy", confidence=0.95,
                                    body="See [[a-one]]."), actor="engine")
    result = export_agent(store, T, A, DirectorySink(tmp_path), fmt="graphml")
    assert result.files == ["knowledge.graphml"] and result.edges == 2

    graph = nx.read_graphml(tmp_path / "knowledge.graphml")
    assert set(graph.nodes) == {"a-one", "b-two"}
    assert graph.nodes["a-one"] == {"name": "a-one", "type": "fact", "description": hostile,
                                    "confidence": 0.6, "provenance": "observed"}
    assert graph.nodes["b-two"]["provenance"] == "policy" and graph.nodes["b-two"]["confidence"] == 0.95
    # [[outside]] does not resolve and a self-link says nothing: neither becomes an edge.
    assert set(graph.edges) == {("a-one", "b-two"), ("b-two", "a-one")}


def test_graphml_of_the_demo_agent(demo_store, tmp_path):
    export_agent(demo_store, T, A, DirectorySink(tmp_path), fmt="graphml")
    graph = nx.read_graphml(tmp_path / "knowledge.graphml")
    assert len(graph.nodes) == len(list(DEMO.glob("*.md")))
    assert ("objecao-frete-caro", "frete-gratis-acima-199") in graph.edges


def test_unknown_agent_and_agent_without_concepts_are_distinct_errors(store, tmp_path):
    with pytest.raises(UnknownAgent):
        export_agent(store, T, "nobody", DirectorySink(tmp_path))
    store.put_config(T, "configured", "knowledge: {}\n", actor="operator:ana")
    with pytest.raises(NothingToExport):
        export_agent(store, T, "configured", DirectorySink(tmp_path))


def test_an_unwritable_out_folder_is_a_clear_error(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    with pytest.raises(SinkError, match="cannot write"):
        DirectorySink(blocker / "out")


# ------------------------------------------------------------------ the command


@pytest.fixture
def cli_env(monkeypatch, bucket):
    monkeypatch.setenv("KNOWLEDGE_BUCKET", bucket)


def test_cli_export_prints_a_summary(cli_env, demo_store, tmp_path, capsys):
    assert main(["export", "--agent", A, "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"exported {len(list(DEMO.glob('*.md')))} concepts as") and str(tmp_path) in out
    assert main(["export", "--agent", A, "--out", str(tmp_path / "g"), "--format", "graphml"]) == 0
    assert (tmp_path / "g" / "knowledge.graphml").exists()


@pytest.mark.parametrize("args, message", [
    (["export", "--agent", "nobody", "--out", "{tmp}"], "has no knowledge store"),
    (["export", "--agent", "store-support", "--tenant", "other", "--out", "{tmp}"], "has no knowledge store"),
    (["export", "--agent", "store-support", "--out", "{tmp}/file/out"], "cannot write"),
])
def test_cli_errors_exit_non_zero_with_a_message(cli_env, demo_store, tmp_path, capsys, args, message):
    (tmp_path / "file").write_text("x")
    code = main([a.replace("{tmp}", str(tmp_path)) for a in args])
    assert code == 1 and message in capsys.readouterr().err


def test_cli_rejects_a_hostile_agent_name_as_usage(cli_env, tmp_path, capsys):
    with pytest.raises(SystemExit) as caught:
        main(["export", "--agent", "../etc", "--out", str(tmp_path)])
    assert caught.value.code == 2 and "agent: must be lowercase" in capsys.readouterr().err


def test_cli_without_a_bucket_setting_says_so(monkeypatch, tmp_path, capsys):
    monkeypatch.delenv("KNOWLEDGE_BUCKET", raising=False)
    assert main(["export", "--agent", A, "--out", str(tmp_path)]) == 1
    assert "KNOWLEDGE_BUCKET" in capsys.readouterr().err


def test_progress_bar_draws_only_on_a_terminal(cli_env, demo_store, tmp_path):
    from knowledge_cli.main import ProgressBar

    class Terminal:
        def __init__(self, tty):
            self.tty, self.text = tty, ""

        def isatty(self):
            return self.tty

        def write(self, text):
            self.text += text

        def flush(self):
            pass

    tty, pipe = Terminal(True), Terminal(False)
    for stream in (tty, pipe):
        export_agent(demo_store, T, A, DirectorySink(tmp_path / str(id(stream))), progress=ProgressBar("x", stream))
    total = len(list(DEMO.glob("*.md")))
    assert f"] {total}/{total}\n" in tty.text and "#" * 30 in tty.text
    assert pipe.text == ""


def test_md_export_carries_the_agents_vocabulary_beside_the_concepts(demo_store, tmp_path):
    demo_store.put_vocabulary(T, A, (DEMO / "vocabulary.yaml").read_text(encoding="utf-8"), actor="operator:ana")
    result = export_agent(demo_store, T, A, DirectorySink(tmp_path), fmt="md")
    assert (tmp_path / "vocabulary.yaml").read_bytes() == (DEMO / "vocabulary.yaml").read_bytes()
    assert result.vocabulary and "vocabulary.yaml" in result.files
    assert result.concepts == len(list(DEMO.glob("*.md")))
    assert result.summary().endswith("and its vocabulary.yaml")
