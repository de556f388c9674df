"""A fuzz pass over the studio API, driven by its OpenAPI document: whatever arrives, the API
answers without a server error, and every stored concept still parses afterwards."""

from __future__ import annotations

import copy
import json
import re
import uuid

import pytest
from helpers.handlers import LambdaContext, load_event, load_handler
from helpers.paths import DEMO, ROOT
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from knowledge.format.concept import parse

T, A = "default", "store-support"
OPENAPI = json.loads((ROOT / "studio_web" / "openapi.json").read_text())
OPERATIONS = [(path, method.upper()) for path, item in OPENAPI["paths"].items() for method in item]
NAMES = ["troca-em-30-dias", "cep-sudeste-cd-campinas", "nao-existe", "UPPER", "a--b", "..", "%2e%2e", "x" * 80,
         "nome-ação", " ", "default", "store-support"]
hostile_text = st.text(min_size=0, max_size=40)
segment = st.one_of(st.sampled_from(NAMES), hostile_text.filter(lambda s: "/" not in s and "?" not in s and s))


def markdowns():
    demo = (DEMO / "troca-em-30-dias.md").read_text()
    mutated = st.tuples(st.integers(0, len(demo)), st.integers(0, 40), hostile_text).map(
        lambda t: demo[:t[0]] + t[2] + demo[t[0] + t[1]:])
    return st.one_of(mutated, hostile_text, st.just(demo))


@st.composite
def requests(draw):
    path, method = draw(st.sampled_from(OPERATIONS))
    params = {name: draw(segment) for name in re.findall(r"{(\w+)}", path)}
    if "tenant" in params:
        params["tenant"] = draw(st.sampled_from([T, T, "loja-b", params["tenant"]]))
    if "agent" in params:
        params["agent"] = draw(st.sampled_from([A, A, params["agent"]]))
    concrete = path.format(**params)
    operation = OPENAPI["paths"][path][method.lower()]
    body = None
    if "requestBody" in operation:
        body = draw(st.one_of(
            st.builds(lambda m: {"markdown": m}, markdowns()),
            st.builds(lambda y: {"yaml": y}, st.one_of(hostile_text, st.just("knowledge:\n  top_k: 3\n"))),
            st.dictionaries(st.text(max_size=8), st.one_of(st.integers(), hostile_text), max_size=3)))
    query = draw(st.one_of(st.none(), st.dictionaries(st.sampled_from(["status", "type", "q", "x"]), hostile_text,
                                                      max_size=3)))
    headers = draw(st.dictionaries(st.sampled_from(["if-match", "content-type"]), hostile_text, max_size=2))
    return method, concrete, body, query, headers


@pytest.fixture(scope="module")
def api(moto_endpoint):
    import boto3

    from knowledge.store.concepts import ConceptStore

    s3 = boto3.client("s3", endpoint_url=moto_endpoint, region_name="us-east-1")
    bucket = f"fuzz-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(Bucket=bucket)
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    store = ConceptStore(s3, bucket)
    store.put_config(T, A, (DEMO / "knowledge.yaml").read_text(), actor="operator:demo")
    for path in sorted(DEMO.glob("*.md")):
        store.create(T, A, parse(path.read_text()), actor="engine")
    # As the template deploys it: with the queue its saves' reviews and words jobs go to.
    queue = boto3.client("sqs", endpoint_url=moto_endpoint, region_name="us-east-1").create_queue(
        QueueName=f"fuzz-reviews-{uuid.uuid4().hex[:8]}")["QueueUrl"]
    mp = pytest.MonkeyPatch()
    handler = load_handler("studio_api", mp, dict(KNOWLEDGE_BUCKET=bucket, POLICY_REVIEW_QUEUE_URL=queue),
                           POWERTOOLS_SERVICE_NAME="studio-fuzz", POWERTOOLS_LOG_LEVEL="CRITICAL")
    yield handler, store
    mp.undo()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(requests())
def test_no_request_gets_a_server_error(api, request_parts):  # noqa: D103
    handler, _ = api
    method, path, body, query, headers = request_parts
    event = copy.deepcopy(load_event("studio-list-conflicts.json"))
    event["rawPath"] = event["requestContext"]["http"]["path"] = path
    event["requestContext"]["http"]["method"] = method
    event["queryStringParameters"] = query or None
    event["rawQueryString"] = ""
    event["headers"] = {**event["headers"], **headers}
    if body is not None:
        event["body"] = json.dumps(body, ensure_ascii=False)
    answer = handler.lambda_handler(event, LambdaContext())
    assert answer["statusCode"] < 500, (method, path, answer.get("body"))
    json.loads(answer["body"])  # always a JSON answer


def test_after_the_fuzz_every_stored_concept_still_parses(api):
    _, store = api
    for item in store.load_all(T, A):
        parse(item.data)  # raises if the fuzz corrupted anything
    assert store.get_config(T, A).config is not None
