"""What the template sets, as the functions and the local stack use it: the model API key from Secrets
Manager (never the key itself), the model consumers' bounded fan-out, the concept version and change
journal lifecycle, and `sam local invoke`'s env.json."""

from __future__ import annotations

import json
import os
import re
import threading
import uuid
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Optional

import boto3
import pytest
from helpers.handlers import LambdaContext, load_event, load_handler
from helpers.operations import RESOURCES, TEMPLATE
from helpers.paths import EVENTS

from knowledge_dev.template import bucket_specs, create_buckets
from shared.errors import SecretUnavailable, SettingsError
from shared.settings import Settings


def turn_event() -> dict:
    return load_event("turn-complete.json")


# ------------------------------------------------------------------ the model API key


class KeyRecorder:
    """An OpenAI-compatible endpoint that records the Authorization header of each request."""

    def __init__(self):
        self.authorizations: list[Optional[str]] = []
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's name
                self.rfile.read(int(self.headers.get("content-length", 0)))
                recorder.authorizations.append(self.headers.get("authorization"))
                body = json.dumps({"choices": [{"index": 0, "message": {"role": "assistant", "content": "[]"}}]})
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body.encode())

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def key_recorder():
    recorder = KeyRecorder()
    yield recorder
    recorder.close()


@pytest.fixture(scope="module")
def secrets(moto_endpoint):
    return boto3.client("secretsmanager", endpoint_url=moto_endpoint, region_name="us-east-1")


def new_secret(secrets, text: str) -> str:
    return secrets.create_secret(Name=f"model-key-{uuid.uuid4().hex[:8]}", SecretString=text)["ARN"]


def test_extraction_calls_the_model_with_the_key_from_the_secret(monkeypatch, extract_env, key_recorder, secrets):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    arn = new_secret(secrets, "sk-loja-7f3a9c")
    extract = load_handler("extract", monkeypatch, dict(extract_env, OPENAI_BASE_URL=key_recorder.base_url),
                           OPENAI_API_KEY_SECRET_ARN=arn)
    assert extract.lambda_handler(turn_event(), LambdaContext()) == {"batchItemFailures": []}
    assert key_recorder.authorizations == ["Bearer sk-loja-7f3a9c"]


def test_a_secret_holding_json_gives_its_api_key_field(secrets):
    arn = new_secret(secrets, json.dumps({"api_key": "sk-json-01", "note": "rotated 2026-11"}))
    settings = Settings.from_env({"KNOWLEDGE_BUCKET": "kb-bucket", "OPENAI_API_KEY_SECRET_ARN": arn})
    assert settings.openai_api_key == "sk-json-01" and "sk-json-01" not in repr(settings)


def test_a_key_set_in_the_environment_wins_and_the_secret_is_not_read():
    # An ARN of a secret that does not exist: reading it would fail.
    arn = "arn:aws:secretsmanager:us-east-1:123456789012:secret:nowhere-AbCdEf"
    settings = Settings.from_env({"KNOWLEDGE_BUCKET": "kb-bucket", "OPENAI_API_KEY": "sk-local",
                                  "OPENAI_API_KEY_SECRET_ARN": arn})
    assert settings.openai_api_key == "sk-local"


@pytest.mark.parametrize("problem", ["missing", "empty", "json without a key", "not an arn"])
def test_a_key_that_cannot_be_read_fails_the_cold_start_with_a_typed_error(problem, secrets, monkeypatch, extract_env):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    arn = {"missing": "arn:aws:secretsmanager:us-east-1:123456789012:secret:nowhere-AbCdEf",
           "empty": new_secret(secrets, "  "),
           "json without a key": new_secret(secrets, json.dumps({"token": "sk-x"})),
           "not an arn": "sk-pasted-by-mistake"}[problem]
    with pytest.raises(SettingsError) as raised:
        load_handler("extract", monkeypatch, extract_env, OPENAI_API_KEY_SECRET_ARN=arn)
    assert "OPENAI_API_KEY_SECRET_ARN" in str(raised.value) and "sk-" not in str(raised.value)
    assert isinstance(raised.value, SecretUnavailable) == (problem != "not an arn")


# A function that names the utility model without calling it (the studio says what a move to shared costs
# in the model's calls) has no key at all, not even the secret's ARN.
NAMES_THE_MODEL_ONLY = {"StudioApiFunction"}


def test_no_function_is_given_the_key_itself_only_the_secrets_arn():
    for logical_id, resource in RESOURCES.items():
        if resource["Type"] != "AWS::Serverless::Function":
            continue
        variables = resource["Properties"].get("Environment", {}).get("Variables", {})
        assert "OPENAI_API_KEY" not in variables, logical_id
        if "UTILITY_MODEL" in variables and logical_id not in NAMES_THE_MODEL_ONLY:
            assert variables["OPENAI_API_KEY_SECRET_ARN"] == {"Ref": "OpenAIApiKeySecretArn"}, logical_id
    assert "OpenAIApiKey" not in TEMPLATE["Parameters"]
    for logical_id in NAMES_THE_MODEL_ONLY:
        variables = RESOURCES[logical_id]["Properties"]["Environment"]["Variables"]
        assert variables["UTILITY_MODEL"] == {"Ref": "UtilityModel"} and "OPENAI_API_KEY_SECRET_ARN" not in variables


def test_the_model_consumers_fan_out_is_bounded_by_their_event_sources():
    for function, parameter in (("ExtractFunction", "ExtractMaxConcurrency"),
                                ("ConsolidateFunction", "ConsolidateMaxConcurrency")):
        properties = RESOURCES[function]["Properties"]
        (source,) = [e["Properties"] for e in properties["Events"].values() if e["Type"] == "SQS"]
        assert source["ScalingConfig"] == {"MaximumConcurrency": {"Ref": parameter}}
        assert "ReservedConcurrentExecutions" not in properties


# ------------------------------------------------------------------ concept version lifecycle


def test_the_local_knowledge_bucket_expires_old_concept_versions_as_the_template_says(s3):
    (spec,) = [spec for spec in bucket_specs(TEMPLATE) if spec.logical_id == "KnowledgeBucket"]
    (rule,) = [rule for rule in spec.lifecycle_rules if rule["ID"] == "expire-old-concept-versions"]
    assert rule["Filter"] == {"Prefix": "agents/"}
    assert rule["NoncurrentVersionExpiration"] == {"NoncurrentDays": 30, "NewerNoncurrentVersions": 20}
    applied = create_buckets(s3, [replace(spec, logical_id=f"Kb{uuid.uuid4().hex[:8]}")])
    rules = s3.get_bucket_lifecycle_configuration(Bucket=applied["KNOWLEDGE_BUCKET"])["Rules"]
    (applied_rule,) = [r for r in rules if r["ID"] == "expire-old-concept-versions"]
    # moto keeps the prefix and the days but drops NewerNoncurrentVersions (S3 keeps it).
    assert applied_rule["Filter"] == {"Prefix": "agents/"}
    assert applied_rule["NoncurrentVersionExpiration"]["NoncurrentDays"] == 30


def test_the_template_expires_the_change_journal_as_the_store_and_the_local_stack_expect():
    """Readers trust the journal for less than its retention (knowledge.store.concepts); the rule that
    expires it is the one the local stack applies."""
    from knowledge.store.journal import JOURNAL_RETENTION_DAYS
    from knowledge_dev.local_aws import journal_lifecycle_rule

    (spec,) = [spec for spec in bucket_specs(TEMPLATE) if spec.logical_id == "KnowledgeBucket"]
    (rule,) = [rule for rule in spec.lifecycle_rules if rule["ID"] == "expire-change-journal"]
    assert rule == journal_lifecycle_rule()
    assert rule["Expiration"] == {"Days": JOURNAL_RETENTION_DAYS}
    # Every writer of a concept or knowledge.yaml may add its journal entry there, and nowhere else.
    for name in ("ConsolidateFunction", "StudioApiFunction"):
        statements = RESOURCES[name]["Properties"]["Policies"][0]["Statement"]
        (journal,) = [st for st in statements if isinstance(st, dict) and st.get("Sid") == "JournalConceptChanges"]
        assert journal["Resource"] == {"Fn::Sub": "${KnowledgeBucket.Arn}/journal/*"}


# ------------------------------------------------------------------ sam local invoke


def test_env_json_sets_only_variables_the_template_gives_each_function():
    """`sam local invoke --env-vars` ignores a variable the template does not declare for the function."""
    env = json.loads((EVENTS / "env.json").read_text())
    shared = set(TEMPLATE["Globals"]["Function"]["Environment"]["Variables"])
    assert {"BackfillFunction", "ExportFunction"} <= set(env)
    for function, variables in env.items():
        own = set(RESOURCES[function]["Properties"].get("Environment", {}).get("Variables", {}))
        assert set(variables) <= shared | own, function
        assert {"KNOWLEDGE_BUCKET", "SESSIONS_BUCKET"} <= set(variables), function
        for value in variables.values():  # each placeholder names the stack output that fills it
            placeholder = re.fullmatch(r"REPLACE-with-the-(\w+)-output", value)
            assert placeholder is None or placeholder[1] in TEMPLATE["Outputs"], value


# ------------------------------------------------------------------ the handlers under test


def test_a_handler_under_test_is_given_what_the_template_gives_its_function(monkeypatch, bucket):
    """helpers.handlers.function_env: the template's variables for a function, from a test's stand-ins."""
    from helpers.handlers import function_env

    stack = dict(KNOWLEDGE_BUCKET=bucket, POLICY_REVIEW_QUEUE_URL="http://127.0.0.1:1/123456789012/review",
                 CANDIDATES_QUEUE_URL="http://127.0.0.1:1/123456789012/candidates.fifo", FACTS_KEY="k" * 48)
    extract = function_env("extract", stack)
    assert extract["POWERTOOLS_SERVICE_NAME"] == "knowledge-extract" and extract["KNOWLEDGE_BUCKET"] == bucket
    assert extract["CANDIDATES_QUEUE_URL"] == stack["CANDIDATES_QUEUE_URL"] and "FACTS_KEY" in extract
    assert "POLICY_REVIEW_QUEUE_URL" not in extract  # the template gives it to consolidate, not to extract
    assert "UTILITY_MODEL" not in extract  # no stand-in: the code's default, as with the parameter unset
    with pytest.raises(ValueError, match="functions/extract no POLICY_REVIEW_QUEUE_URL"):
        function_env("extract", stack, POLICY_REVIEW_QUEUE_URL=stack["POLICY_REVIEW_QUEUE_URL"])
    with pytest.raises(ValueError, match="functions/no_such"):
        function_env("no_such", stack)

    load_handler("repair", monkeypatch, stack)
    assert os.environ["POWERTOOLS_SERVICE_NAME"] == "knowledge-repair" and os.environ["KNOWLEDGE_BUCKET"] == bucket
    assert "POLICY_REVIEW_QUEUE_URL" not in os.environ and "FACTS_KEY" in os.environ
