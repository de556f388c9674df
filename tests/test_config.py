"""The `knowledge:` block: defaults, absent means off, unknown keys and bad values are errors."""

from __future__ import annotations

import logging

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

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


LAUGHS = ('a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
          + "".join(f"{n}: &{n} [*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p}]\n"
                    for p, n in zip("abcdefgh", "bcdefghi")))


@pytest.mark.parametrize("document, fragment", [
    (LAUGHS + "knowledge: {}\n", "anchors (&name) are not allowed"),
    ("base: &b {top_k: 3}\nknowledge:\n  <<: *b\n", "anchors"),
    ("knowledge:\n  <<: {top_k: 3}\n", "merge key << is not allowed"),
    ("knowledge:\n  top_k: 3\n  top_k: 4\n", "line 3: duplicate key 'top_k'"),
    ("knowledge:\n  types: [[fact]]\n", "nested this deep"),
    ("knowledge:\n  types: [{fact: 1}, fact]\n", "nested this deep"),
    ("knowledge:\n  top_k: " + "9" * 5000 + "\n", "at most 32 characters"),
    ("knowledge:\n  min_score: " + "9" * 31 + "\n", "knowledge.min_score"),
    ("knowledge:\n  min_score: .nan\n", "knowledge.min_score"),
    ("knowledge:\n  min_score: 1.0e+400\n", "knowledge.min_score"),
    ("knowledge:\n  prompt: !!python/object/apply:os.system ['true']\n", "tags (!!python/object/apply:os.system)"),
    ("knowledge:\n  prompt: !!binary aGk=\n", "tags (!!binary)"),
    ("knowledge:\n  types: !!set {fact}\n", "tags (!!set)"),
    ("knowledge:\n  [a]: 1\n", "a key must be text"),
    ("knowledge:\n  ~: 1\n", "a key must be text"),
    ("knowledge:\n  " + "[" * 10_000 + "\n", "line 2: invalid YAML: exceeded maximum nesting depth"),
    ("knowledge: {}\n---\nknowledge: {}\n", "one YAML document"),
    ("knowledge:\n  prompt: \"a\\ud800b\"\n", "invalid YAML"),
    ("knowledge:\n  prompt: a\ud800b\n", "lone surrogate"),
    ("knowledge:\n  prompt: a\x00b\n", "invalid YAML"),
    ("knowledge:\r  top_k: 3\n", "lines must end with"),
    (b"knowledge:\n  prompt: \xff\n", "not UTF-8"),
    ("knowledge: {}\n".encode("utf-16"), "not UTF-8"),
    ("knowledge:\n  types: [" + ", ".join(["fact"] * 100) + "]\n", "at most 64 items"),
    ("knowledge:\n" + "".join(f"  k{i}: 1\n" for i in range(40)), "at most 32 keys"),
    ("knowledge:\n  prompt: " + "x" * 40_000 + "\n", "at most 32768 bytes"),
])
def test_hostile_yaml_is_refused_with_the_typed_error(document, fragment):
    with pytest.raises(InvalidConfig) as caught:
        parse_config(document)
    assert fragment in str(caught.value)


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(st.one_of(st.binary(max_size=500), st.lists(st.one_of(st.sampled_from(
    ["knowledge:", "\n  ", "types: ", "top_k: ", "[", "]", "{", "}", "&a ", "*a", "<<: ", "!!set ", "fact",
     "9" * 40, ".nan", "~", ",", "- ", "\r", "\x00", "\ud800", "\ufeff", "'", '"', "? "]), st.text(max_size=6)),
    max_size=30).map("".join)))
def test_any_input_is_a_config_none_or_invalid_config(document):
    try:
        config = parse_config(document)
    except InvalidConfig:
        return
    assert config is None or parse_config(render_config(config)) == config
