"""The turn-complete message: validated, with errors that never quote the conversation."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from helpers.paths import EVENTS, ROOT

from knowledge.errors import InvalidTurn
from knowledge.format.turn import SHOWN_MAX, TURN_MAX_BYTES, parse_turn

SECRET = "meu segredo 4111 1111 1111 1111"


def turn(**overrides):
    body = json.loads((EVENTS / "turn.json").read_text())
    body.update(overrides)
    return body


def test_the_demo_turn_is_valid():
    parsed = parse_turn(json.dumps(turn()))
    assert (parsed.tenant, parsed.agent, parsed.session_id, parsed.turn_id) == (
        "default", "store-support", "sess_demo_01", "turn_0004")
    assert parsed.completed_at.isoformat() == "2026-11-20T14:05:31+00:00"
    assert [m.role for m in parsed.messages] == ["user", "assistant", "user", "assistant"]


def test_the_sqs_event_carries_the_same_turn():
    record = json.loads((EVENTS / "turn-complete.json").read_text())["Records"][0]
    assert json.loads(record["body"]) == turn()


@pytest.mark.parametrize("body, fragment", [
    ("not json {", "not JSON"),
    ("[1, 2]", "the message body must be a JSON object"),
    (json.dumps(turn(tenant="Loja A")), "tenant: must be lowercase"),
    (json.dumps(turn(agent="../x")), "agent: must be lowercase"),
    (json.dumps(turn(session_id="")), "session_id"),
    (json.dumps(turn(messages=[])), "messages"),
    (json.dumps(turn(messages=[{"role": "hacker", "content": SECRET}])), "messages.0.role"),
    (json.dumps(turn(messages=[{"role": "user", "content": ""}])), "messages.0.content"),
    (json.dumps(turn(completed_at="2026-11-20T14:05:31")), "completed_at: must carry a time zone"),
    (json.dumps(turn(completed_at="yesterday")), "completed_at"),
    (json.dumps(turn(customer_id=SECRET)), "customer_id"),
    (json.dumps(turn(customer_id=17)), "customer_id"),
    (json.dumps(turn(messages=[{"role": "user", "content": "oi", "lang": SECRET}])), "messages.0.lang: unknown key"),
    (json.dumps(turn(extra=SECRET * 8000)), "larger than"),
    ("[" * 100_000, "not JSON"),
    (json.dumps({k: v for k, v in turn().items() if k != "turn_id"}), "turn_id: Field required"),
    (json.dumps(turn(messages=[{"role": "user", "content": "x" * (TURN_MAX_BYTES + 1)}])), "larger than"),
    (json.dumps(turn(messages=[{"role": "user", "content": SECRET * 2000}])), "messages.0.content"),
])
def test_bad_messages_are_rejected_without_quoting_content(body, fragment):
    with pytest.raises(InvalidTurn) as caught:
        parse_turn(body)
    assert fragment in str(caught.value)
    assert "segredo" not in str(caught.value) and "4111" not in str(caught.value)


def test_a_customer_id_is_optional_and_kept_when_sent():
    assert parse_turn(json.dumps(turn())).customer_id is None
    assert parse_turn(json.dumps(turn(customer_id="cus_8812:br"))).customer_id == "cus_8812:br"


def test_unknown_top_level_fields_are_ignored_and_never_carried_on():
    parsed = parse_turn(json.dumps(turn(channel="whatsapp", extra={"nested": [SECRET]})))
    assert parsed == parse_turn(json.dumps(turn()))
    assert "segredo" not in parsed.model_dump_json() and "whatsapp" not in parsed.model_dump_json()


def test_a_turn_without_a_customer_is_written_in_the_previous_shape():
    assert "customer_id" not in json.loads(parse_turn(json.dumps(turn())).model_dump_json())
    assert json.loads(parse_turn(json.dumps(turn())).model_dump_json()).keys() == turn().keys()
    with_customer = parse_turn(json.dumps(turn(customer_id="cus_1")))
    assert json.loads(with_customer.model_dump_json())["customer_id"] == "cus_1"


def test_what_the_session_was_shown_is_kept_with_the_turn_its_repeats_folded():
    shown = {"retrieved": ["frete-gratis", "cep-sudeste", "frete-gratis"], "loaded": ["cep-sudeste"] * 3}
    parsed = parse_turn(json.dumps(turn(shown=shown)))
    assert parsed.shown.retrieved == ("frete-gratis", "cep-sudeste") and parsed.shown.loaded == ("cep-sudeste",)
    # The archive keeps the validated message, so a redelivery or a backfill reads the same record.
    assert parse_turn(parsed.model_dump_json()) == parsed
    assert json.loads(parsed.model_dump_json())["shown"] == {"retrieved": ["frete-gratis", "cep-sudeste"],
                                                             "loaded": ["cep-sudeste"]}
    assert parse_turn(json.dumps(turn(shown={}))).shown.retrieved == ()
    assert parse_turn(json.dumps(turn())).shown is None


@pytest.mark.parametrize("shown, fragment", [
    ({"retrieved": ["Frete Grátis"]}, "shown.retrieved.0: must be lowercase"),
    ({"loaded": ["../concepts/x"]}, "shown.loaded.0: must be lowercase"),
    ({"loaded": ["x" * 65]}, "shown.loaded.0: must be at most 64 characters"),
    ({"retrieved": [f"c-{i}" for i in range(SHOWN_MAX + 1)]}, "shown.retrieved: "),
    ({"retrieved": "frete-gratis"}, "shown.retrieved"),
    ({"retrieved": [17]}, "shown.retrieved.0"),
    ({"shown_to": [SECRET]}, "shown.shown_to: unknown key"),
    (["frete-gratis"], "shown"),
])
def test_a_shown_record_that_breaks_a_rule_is_refused_with_a_clear_error(shown, fragment):
    with pytest.raises(InvalidTurn) as caught:
        parse_turn(json.dumps(turn(shown=shown)))
    assert fragment in str(caught.value) and "segredo" not in str(caught.value)


def test_the_shown_record_bounds_names_not_repeats():
    many = [f"c-{i}" for i in range(SHOWN_MAX)]
    assert len(parse_turn(json.dumps(turn(shown={"retrieved": many * 4}))).shown.retrieved) == SHOWN_MAX
    with pytest.raises(InvalidTurn, match=f"at most {SHOWN_MAX}"):
        parse_turn(json.dumps(turn(shown={"loaded": many + ["one-more"]})))


def test_published_schemas_match_the_code():
    result = subprocess.run([sys.executable, "-m", "scripts.gen.schemas", "--check"], cwd=ROOT,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    schema = json.loads((ROOT / "schemas" / "turn-complete.schema.json").read_text())
    assert set(schema["required"]) == {"tenant", "agent", "session_id", "turn_id", "completed_at", "messages"}
    assert schema["properties"]["customer_id"]["anyOf"][0]["pattern"] == schema["properties"]["session_id"]["pattern"]
    # Unknown top-level fields are ignored (rolling deploys); a conversation message stays closed.
    assert schema["additionalProperties"] is True
    assert schema["$defs"]["Message"]["additionalProperties"] is False
    assert "shown" not in schema["required"] and schema["$defs"]["Shown"]["additionalProperties"] is False
    assert schema["$defs"]["Shown"]["properties"]["loaded"]["maxItems"] == SHOWN_MAX
    sighting = json.loads((ROOT / "schemas" / "sighting.schema.json").read_text())
    assert sighting["additionalProperties"] is True and sighting["properties"]["v"]["enum"] == [1, 2]
    assert sighting["$defs"]["EvidenceRef"]["additionalProperties"] is False
    assert "evidence" not in sighting["required"] and "echo" not in sighting["required"]
