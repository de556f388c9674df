"""The local studio adapter authorizes exactly as the HTTP API's JWT authorizer would."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
import uuid

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from helpers.handlers import LambdaContext, load_handler
from helpers.paths import DEMO

from knowledge.format.concept import parse
from knowledge_dev.studio_server import AUDIENCE, LocalAuthorizer, StudioServer

T, A = "default", "store-support"
KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)  # the local authorizer's signing key


@pytest.fixture
def studio(monkeypatch, store, bucket):
    for path in sorted(DEMO.glob("*.md")):
        store.create(T, A, parse(path.read_text()), actor="engine")
    handler = load_handler("studio_api", monkeypatch, dict(
        KNOWLEDGE_BUCKET=bucket, STUDIO_ORIGIN="http://127.0.0.1:8080"),
        POWERTOOLS_SERVICE_NAME=f"studio-{uuid.uuid4().hex[:6]}")
    calls = []

    def counted(event, context):
        calls.append(event)
        return handler.lambda_handler(event, context)

    authorizer = LocalAuthorizer(issuer="http://127.0.0.1/dev", key=KEY)
    server = StudioServer(counted, authorizer, context_factory=LambdaContext).start()
    yield server, authorizer, calls
    server.stop()


def fetch(server, path, token=None, method="GET", body=None, headers=None):
    request = urllib.request.Request(server.url + path, method=method, data=body,
                                     headers={**({"Authorization": f"Bearer {token}"} if token else {}),
                                              "Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, answer.read(), dict(answer.headers)
    except urllib.error.HTTPError as error:
        return error.code, error.read(), dict(error.headers)


PATH = f"/api/tenants/{T}/agents/{A}/concepts"


def test_a_valid_token_reaches_the_handler_with_its_claims(studio):
    server, authorizer, calls = studio
    status, body, _ = fetch(server, PATH, authorizer.token())
    assert status == 200 and len(json.loads(body)["concepts"]) == 7
    claims = calls[0]["requestContext"]["authorizer"]["jwt"]["claims"]
    assert claims["sub"] == "dev-operator" and claims["cognito:groups"] == "[default]"
    assert calls[0]["rawPath"] == f"/tenants/{T}/agents/{A}/concepts"


def other_key_token():
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    now = int(time.time())
    return jwt.encode({"sub": "x", "iss": "http://127.0.0.1/dev", "aud": AUDIENCE, "exp": now + 60}, key,
                      algorithm="RS256")


@pytest.mark.parametrize("make_token", [
    lambda a: None,
    lambda a: "not-a-jwt",
    lambda a: other_key_token(),
    lambda a: a.token(ttl_seconds=-10),
    lambda a: jwt.encode({"sub": "x", "iss": a.issuer, "aud": "someone-else", "exp": int(time.time()) + 60},
                         KEY, algorithm="RS256"),
    lambda a: jwt.encode({"sub": "x", "iss": a.issuer, "aud": AUDIENCE, "exp": int(time.time()) + 60},
                         "a-shared-secret-long-enough-for-hs256-0123456789", algorithm="HS256"),
])
def test_bad_tokens_are_401_before_the_handler(studio, make_token):
    server, authorizer, calls = studio
    status, body, _ = fetch(server, PATH, make_token(authorizer))
    assert status == 401 and json.loads(body) == {"message": "Unauthorized"} and calls == []


def test_another_tenant_is_403(studio):
    server, authorizer, _ = studio
    status, _, _ = fetch(server, PATH, authorizer.token({"cognito:groups": ["loja-b"]}))
    assert status == 403


def test_a_save_round_trip_through_http(studio):
    server, authorizer, _ = studio
    token = authorizer.token()
    _, body, _ = fetch(server, f"{PATH}/troca-em-30-dias", token)
    concept = json.loads(body)
    edited = concept["markdown"].replace("embalagem original", "caixa original")
    status, body, _ = fetch(server, f"{PATH}/troca-em-30-dias", token, method="PUT",
                            body=json.dumps({"markdown": edited}).encode(), headers={"If-Match": concept["etag"]})
    assert status == 200 and json.loads(body)["markdown"].count("caixa original") == 1
    status, body, _ = fetch(server, f"{PATH}/troca-em-30-dias", token, method="PUT",
                            body=json.dumps({"markdown": edited}).encode(), headers={"If-Match": concept["etag"]})
    assert status == 412 and "caixa original" in json.loads(body)["current"]["markdown"]


def test_cors_preflight_skips_the_authorizer_and_names_only_the_studio_origin(studio):
    server, _, _ = studio
    status, _, headers = fetch(server, f"{PATH}/x", method="OPTIONS",
                               headers={"Origin": "http://127.0.0.1:8080", "Access-Control-Request-Method": "PUT"})
    assert status == 204 and headers.get("Access-Control-Allow-Origin") == "http://127.0.0.1:8080"
    assert "If-Match" in headers.get("Access-Control-Allow-Headers", "")


def pkce_pair():
    import base64
    import hashlib
    import secrets

    verifier = secrets.token_urlsafe(32)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    return verifier, challenge


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def authorize(server, **overrides):
    from urllib.parse import urlencode

    query = {"response_type": "code", "client_id": AUDIENCE, "redirect_uri": f"{server.url}/studio/knowledge",
             "scope": "openid email", "state": "s1", "code_challenge_method": "S256", **overrides}
    opener = urllib.request.build_opener(NoRedirect)
    try:
        opener.open(f"{server.url}/oauth2/authorize?{urlencode(query)}", timeout=10)
    except urllib.error.HTTPError as answer:
        return answer.code, answer.headers.get("location")
    raise AssertionError("expected a redirect or an error")


def exchange(server, code, verifier, redirect=None):
    from urllib.parse import urlencode

    form = urlencode({"grant_type": "authorization_code", "client_id": AUDIENCE, "code": code,
                      "redirect_uri": redirect or f"{server.url}/studio/knowledge", "code_verifier": verifier})
    request = urllib.request.Request(f"{server.url}/oauth2/token", data=form.encode(), method="POST",
                                     headers={"Content-Type": "application/x-www-form-urlencoded"})
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_sign_in_with_pkce_gives_a_token_the_api_accepts(studio):
    server, _, _ = studio
    verifier, challenge = pkce_pair()
    status, location = authorize(server, code_challenge=challenge)
    assert status == 302 and location.startswith(f"{server.url}/studio/knowledge?code=") and "state=s1" in location
    code = location.split("code=")[1].split("&")[0]
    status, tokens = exchange(server, code, verifier)
    assert status == 200 and tokens["token_type"] == "Bearer"
    assert fetch(server, PATH, tokens["id_token"])[0] == 200
    assert exchange(server, code, verifier)[0] == 400  # a code is good once


def test_sign_in_refuses_a_wrong_verifier_client_or_redirect(studio):
    server, _, _ = studio
    verifier, challenge = pkce_pair()
    _, location = authorize(server, code_challenge=challenge)
    code = location.split("code=")[1].split("&")[0]
    assert exchange(server, code, "not-the-verifier")[0] == 400
    assert authorize(server, code_challenge=challenge, client_id="someone-else")[0] == 400
    assert authorize(server, code_challenge=challenge, redirect_uri="https://evil.example/cb")[0] == 400
    assert authorize(server, code_challenge=challenge, code_challenge_method="plain")[0] == 400


def test_a_body_that_is_not_utf8_is_422_through_the_adapter_not_a_dropped_connection(studio):
    server, authorizer, calls = studio
    status, body, _ = fetch(server, PATH, authorizer.token(), method="POST",
                            body=b'{"markdown": "---\nname: a\xff\n---\n\nx\n"}')
    assert status == 422 and json.loads(body)["error"]["code"] == "invalid_request"
    assert calls[-1]["isBase64Encoded"] is True


@pytest.mark.parametrize("tail", ["%0A", "%0D", "%00", "%1b", "%7F", "%C2%85"])
def test_a_path_with_an_encoded_control_character_is_400_invalid_name(studio, tail):
    server, authorizer, _ = studio
    for method in ("GET", "DELETE"):
        status, body, _ = fetch(server, f"{PATH}/troca-em-30-dias{tail}", authorizer.token(), method=method)
        assert status == 400 and json.loads(body)["error"]["code"] == "invalid_name"
    assert fetch(server, f"{PATH}/troca-em-30-dias", authorizer.token())[0] == 200


def test_groups_spelled_to_look_like_a_tenant_do_not_reach_it(studio):
    server, authorizer, _ = studio
    for groups in (["support,default"], ["[x]default"], ["default]"], ["[default"]):
        assert fetch(server, PATH, authorizer.token({"cognito:groups": groups}))[0] == 403


def test_the_page_is_served_under_the_same_csp_as_on_aws():
    """template.yaml's CloudFront policy, but for connect-src (API and sign-in are on the page's origin here)."""
    from helpers.paths import ROOT

    from knowledge_dev.studio_server import PAGE_CSP

    line = next(line for line in (ROOT / "template.yaml").read_text().splitlines()
                if "ContentSecurityPolicy: !Sub" in line)
    deployed = dict(part.strip().split(" ", 1) for part in line.split('"')[1].split(";"))
    local = dict(part.strip().split(" ", 1) for part in PAGE_CSP.split(";"))
    assert {k: v for k, v in deployed.items() if k != "connect-src"} == {k: v for k, v in local.items()
                                                                          if k != "connect-src"}


@pytest.mark.parametrize("path", ["/studio/config.json", PATH])
def test_head_answers_like_get_without_a_body(studio, path):
    """A link checker or a load balancer's probe asks HEAD: GET's status and headers, no body (not 501)."""
    server, authorizer, _ = studio
    got_status, got_body, got_headers = fetch(server, path, authorizer.token())
    status, body, headers = fetch(server, path, authorizer.token(), method="HEAD")
    assert (status, body) == (got_status, b"") and got_status == 200 and got_body
    headers, got_headers = ({k.lower(): v for k, v in h.items()} for h in (headers, got_headers))
    assert headers["content-length"] == str(len(got_body))
    assert headers["content-type"] == got_headers["content-type"]
