"""`knowledge vocabulary show|set`, and an export folder's vocabulary.yaml read back by `knowledge import`."""

from __future__ import annotations

import pytest
from helpers.paths import DEMO

from knowledge.format.concept import parse
from knowledge.format.vocabulary import starter_text
from knowledge_cli.main import main

T, A = "default", "store-support"
READING = "readings:\n  - customers: [alelo]\n    store: vale-alimentação\n"


@pytest.fixture
def cli_env(monkeypatch, bucket):
    monkeypatch.setenv("KNOWLEDGE_BUCKET", bucket)


def test_set_from_a_file_or_the_starter_then_show(cli_env, store, tmp_path, capsys):
    store.put_config(T, A, (DEMO / "knowledge.yaml").read_text(), actor="operator:demo")
    assert main(["vocabulary", "show", "--agent", A]) == 0
    assert "has no vocabulary.yaml" in capsys.readouterr().err
    assert main(["vocabulary", "set", "--agent", A, "--starter", "varejo-br", "--operator", "ana"]) == 0
    assert "saved vocabulary.yaml of default/store-support: 42 readings" in capsys.readouterr().out
    assert store.get_vocabulary(T, A).text == starter_text("varejo-br")
    (tmp_path / "v.yaml").write_text(READING, encoding="utf-8")
    assert main(["vocabulary", "set", "--agent", A, "--file", str(tmp_path / "v.yaml"), "--operator", "ana"]) == 0
    assert main(["vocabulary", "show", "--agent", A]) == 0
    shown = capsys.readouterr()
    assert READING in shown.out and "1 readings, 1 phrases" in shown.err


def test_an_invalid_file_is_refused_at_its_line_and_nothing_is_written(cli_env, store, tmp_path, capsys):
    (tmp_path / "v.yaml").write_text("readings:\n  - customers: [alelo]\n", encoding="utf-8")
    assert main(["vocabulary", "set", "--agent", A, "--file", str(tmp_path / "v.yaml"), "--operator", "ana"]) == 1
    assert "line 2 (reading 1): `store` is missing" in capsys.readouterr().err
    assert store.get_vocabulary(T, A) is None


def test_an_export_folder_carries_the_vocabulary_back_into_another_agent(cli_env, store, tmp_path, capsys):
    for path in sorted(DEMO.glob("*.md")):
        store.create(T, A, parse(path.read_text(encoding="utf-8")), actor="engine")
    store.put_vocabulary(T, A, READING, actor="operator:ana")
    assert main(["export", "--agent", A, "--out", str(tmp_path / "out")]) == 0
    assert (tmp_path / "out" / "vocabulary.yaml").read_text(encoding="utf-8") == READING
    assert main(["import", "--agent", "copia", "--operator", "ana", str(tmp_path / "out")]) == 1
    assert "there is no agent 'copia'" in capsys.readouterr().err  # a vocabulary brings no agent into being
    assert store.get_vocabulary(T, "copia") is None
    store.put_config(T, "copia", "knowledge:\n  retrieve: true\n", actor="operator:ana")
    assert main(["import", "--agent", "copia", "--operator", "ana", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert "vocabulary.yaml saved: 1 readings" in out and "ignored" not in out
    assert store.get_vocabulary(T, "copia").text == READING
    assert len(store.list(T, "copia")) == len(list(DEMO.glob("*.md")))
    store.put_vocabulary(T, "copia", READING + "  - customers: [sodexo]\n    store: vale-refeição\n",
                         actor="operator:ana", if_match=store.get_vocabulary(T, "copia").etag)
    assert main(["import", "--agent", "copia", "--operator", "ana", str(tmp_path / "out")]) == 0
    assert "vocabulary.yaml kept: the agent has its own" in capsys.readouterr().out
