"""The `knowledge:` block: defaults, absent means off, unknown keys and bad values are errors."""

from __future__ import annotations

import logging

import pytest

from knowledge.config import parse_config, render_config
from knowledge.errors import InvalidConfig


def test_defaults_when_the_block_is_present_but_empty():
    config = parse_config("knowledge: {}\n")
    assert (config.extract, config.retrieve, config.top_k, config.index) == (True, True, 5, "scan")
    assert config.types == ("fact", "entity", "procedure", "policy", "objection")
    assert config.prompt is None and config.model is None


@pytest.mark.parametrize("document", [None, "", "knowledge:\n", "# only a comment\n"])
def test_an_absent_block_means_the_feature_is_off(document):
    assert parse_config(document) is None


def test_the_spec_example_is_accepted():
    config = parse_config(
        'knowledge:\n  extract: true\n  retrieve: false\n  types: [fact, policy, objection]\n'
        '  top_k: 5\n  prompt: "what counts here"\n  model: "bedrock:anthropic.claude-3-haiku-20240307-v1:0"\n'
        '  index: scan\n')
    assert config.retrieve is False and config.types == ("fact", "policy", "objection")
    assert config.model.startswith("bedrock:")


def test_fts5_is_accepted_and_falls_back_to_scan_with_a_log(caplog):
    with caplog.at_level(logging.WARNING):
        config = parse_config("knowledge:\n  index: fts5\n")
    assert config.index == "fts5" and config.effective_index == "scan"
    assert "falling back to scan" in caplog.text


@pytest.mark.parametrize("document, fragment", [
    ("knowledge:\n  topk: 3\n", "knowledge.topk: unknown key"),
    ("knowledge:\n  top_k: 0\n", "knowledge.top_k"),
    ("knowledge:\n  top_k: '5'\n", "knowledge.top_k"),
    ("knowledge:\n  extract: 'yes please'\n", "knowledge.extract"),
    ("knowledge:\n  types: [fact, rumour]\n", "knowledge.types.1"),
    ("knowledge:\n  types: []\n", "knowledge.types"),
    ("knowledge:\n  types: [fact, fact]\n", "must not repeat"),
    ("knowledge:\n  model: gpt-4\n", "bedrock:<model-id> or openai:<model-name>"),
    ("knowledge:\n  index: vector\n", "knowledge.index"),
    ("knowledge:\n  prompt: " + "x" * 4001 + "\n", "knowledge.prompt"),
    ("knowledge: [1, 2]\n", "must be a mapping"),
    ("other: 1\n", "exactly one top-level key"),
    ("knowledge:\n  top_k: [\n", "line 3: invalid YAML"),
])
def test_bad_blocks_are_clear_errors(document, fragment):
    with pytest.raises(InvalidConfig) as caught:
        parse_config(document)
    assert fragment in str(caught.value)


def test_render_reads_back_the_same_config():
    config = parse_config("knowledge:\n  types: [fact]\n  top_k: 3\n  prompt: 'Só frete: CEPs'\n")
    assert parse_config(render_config(config)) == config
