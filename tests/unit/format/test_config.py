"""The `knowledge:` block: defaults, absent means off, unknown keys and bad values are errors."""

from __future__ import annotations

import logging

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from knowledge.format.config import AgentConfig, parse_agent_config, parse_config, render_agent_config, render_config
from shared.errors import InvalidConfig


def test_defaults_when_the_block_is_present_but_empty():
    config = parse_config("knowledge: {}\n")
    assert (config.extract, config.retrieve, config.top_k, config.index) == (True, True, 5, "scan")
    assert config.types == ("fact", "entity", "procedure", "policy", "objection")
    assert config.prompt is None and config.model is None


def test_learn_from_defaults_to_the_models_words_too_and_a_written_list_is_kept_exactly():
    assert parse_config("knowledge: {}\n").learn_from == ("loaded", "sighting", "model")
    # A knowledge.yaml of an earlier release that wrote its default out keeps it: no model words.
    assert parse_config("knowledge:\n  learn_from: [loaded, sighting]\n").learn_from == ("loaded", "sighting")
    assert parse_config("knowledge:\n  learn_from: []\n").learn_from == ()
    rendered = render_config(parse_config("knowledge:\n  learn_from: [sighting]\n"))
    assert parse_config(rendered).learn_from == ("sighting",)


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
    ("other: 1\n", "other: unknown top-level key"),
    ("- knowledge\n", "must be a mapping of blocks"),
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


# ------------------------------------------------------------------ the `distill:` block (Facts)


def test_the_file_holds_both_blocks_and_each_is_read():
    config = parse_agent_config("knowledge:\n  top_k: 3\ndistill:\n  enabled: true\n  idle_hours: 6\n"
                                "  min_messages: 3\n  max_proposals: 10\n  prompt: 'tamanho, orçamento'\n"
                                "  model: openai:llama3.1\n")
    assert config.knowledge.top_k == 3
    assert (config.distill.enabled, config.distill.idle_hours, config.distill.min_messages,
            config.distill.max_proposals, config.distill.prompt, config.distill.model) == (
        True, 6, 3, 10, "tamanho, orçamento", "openai:llama3.1")


def test_a_file_with_only_distill_turns_knowledge_off():
    assert parse_config("distill:\n  idle_hours: 2\n") is None
    assert parse_agent_config("distill:\n  idle_hours: 2\n").distill.idle_hours == 2


@pytest.mark.parametrize("document", [None, "", "knowledge: {}\n", "distill:\n", "# nada\n"])
def test_an_absent_distill_block_means_distillation_is_off(document):
    assert parse_agent_config(document).distill is None


def test_distill_defaults_when_the_block_is_present_but_empty():
    distill = parse_agent_config("distill: {}\n").distill
    assert (distill.enabled, distill.idle_hours, distill.min_messages, distill.max_proposals,
            distill.prompt, distill.model) == (True, 6, 3, 10, None, None)


def test_a_fraction_of_an_hour_is_an_idle_time():
    assert parse_agent_config("distill:\n  idle_hours: 0.25\n").distill.idle_hours == 0.25


@pytest.mark.parametrize("document, fragment", [
    ("distill:\n  idle_hour: 6\n", "distill.idle_hour: unknown key"),
    ("distill:\n  enabled: 'yes'\n", "distill.enabled"),
    ("distill:\n  enabled: 1\n", "distill.enabled"),
    ("distill:\n  idle_hours: '6'\n", "distill.idle_hours"),
    ("distill:\n  idle_hours: true\n", "distill.idle_hours"),
    ("distill:\n  idle_hours: 0\n", "distill.idle_hours"),
    ("distill:\n  idle_hours: -1\n", "distill.idle_hours"),
    ("distill:\n  idle_hours: .nan\n", "distill.idle_hours"),
    ("distill:\n  idle_hours: .inf\n", "distill.idle_hours"),
    ("distill:\n  idle_hours: 100000\n", "distill.idle_hours"),
    ("distill:\n  min_messages: 0\n", "distill.min_messages"),
    ("distill:\n  min_messages: 2.5\n", "distill.min_messages"),
    ("distill:\n  min_messages: '3'\n", "distill.min_messages"),
    ("distill:\n  max_proposals: 0\n", "distill.max_proposals"),
    ("distill:\n  max_proposals: 51\n", "distill.max_proposals"),
    ("distill:\n  max_proposals: 3.0\n", "distill.max_proposals"),
    ("distill:\n  prompt: " + "x" * 4001 + "\n", "distill.prompt"),
    ("distill:\n  prompt: [a, b]\n", "distill.prompt"),
    ("distill:\n  model: gpt-4\n", "bedrock:<model-id> or openai:<model-name>"),
    ("distill: [1, 2]\n", "distill: must be a mapping"),
    ("distill: true\n", "distill: must be a mapping"),
    ("distill:\n  scope: tenant\n", "distill.scope: unknown key"),
    ("knowledge: {}\ndistill:\n  idle_hours: 1\ndistill:\n  idle_hours: 2\n", "duplicate key 'distill'"),
    ("distill:\n  <<: {idle_hours: 3}\n", "merge key << is not allowed"),
])
def test_bad_distill_blocks_are_clear_errors_naming_the_key(document, fragment):
    with pytest.raises(InvalidConfig) as caught:
        parse_agent_config(document)
    assert fragment in str(caught.value)


def test_a_bad_distill_block_refuses_the_whole_file_for_knowledge_too():
    # One file: the studio's save (which parses it with parse_config) refuses it whole.
    with pytest.raises(InvalidConfig) as caught:
        parse_config("knowledge: {}\ndistill:\n  max_proposals: 500\n")
    assert "distill.max_proposals" in str(caught.value)


def test_render_reads_back_both_blocks():
    config = parse_agent_config("knowledge:\n  types: [fact]\ndistill:\n  idle_hours: 1.5\n  prompt: 'Só: tamanho'\n")
    assert parse_agent_config(render_agent_config(config)) == config
    assert parse_agent_config(render_agent_config(AgentConfig())) == AgentConfig()


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(st.lists(st.one_of(st.sampled_from(
    ["distill:", "knowledge:", "\n  ", "enabled: ", "idle_hours: ", "min_messages: ", "max_proposals: ",
     "prompt: ", "model: ", "true", "0", "6", "0.5", "-1", ".nan", "[", "]", "{", "}", "'", "~", "openai:x",
     "9" * 40, "&a ", "*a"]), st.text(max_size=4)), max_size=24).map("".join))
def test_any_input_is_an_agent_config_or_invalid_config(document):
    try:
        config = parse_agent_config(document)
    except InvalidConfig:
        return
    assert parse_agent_config(render_agent_config(config)) == config
