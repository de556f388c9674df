"""Fixtures the e2e tier shares: one headless Chromium per module, the studio page served by the
local adapter (test_facts_browser.py has its own for the Facts page), and a deployed stack on moto."""

from __future__ import annotations

import json
import uuid

import boto3
import pytest
from helpers.browser import CHROMIUM, signed_in_page
from helpers.handlers import LambdaContext, load_handler
from helpers.paths import DEMO

from knowledge.format.concept import parse

T, A = "default", "store-support"


@pytest.fixture(scope="module")
def browser():
    """One headless Chromium per test module (the studio's and the Facts page's browser tests)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=[
            "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
            "--disable-component-update", "--disable-sync"])
        yield chromium
        chromium.close()


# ------------------------------------------------------------------ the studio page, served by the local adapter

@pytest.fixture
def studio(monkeypatch, store, bucket, sessions_bucket):
    from knowledge_dev.studio_server import LocalAuthorizer, StudioServer

    for path in sorted(DEMO.glob("*.md")):
        store.create(T, A, parse(path.read_text()), actor="engine")
    service = f"studio-{uuid.uuid4().hex[:6]}"

    def cold_start():
        return load_handler("studio_api", monkeypatch, dict(KNOWLEDGE_BUCKET=bucket, SESSIONS_BUCKET=sessions_bucket),
                            POWERTOOLS_SERVICE_NAME=service, POWERTOOLS_LOG_LEVEL="WARNING")

    container = {"handler": cold_start()}
    authorizer = LocalAuthorizer(issuer="http://127.0.0.1/dev")
    server = StudioServer(lambda event, context: container["handler"].lambda_handler(event, context), authorizer,
                          context_factory=LambdaContext).start()
    server.authorizer = authorizer  # to sign in another operator than the dev one
    # A test restarts the container: the next request meets a cold start, its memory empty.
    server.restart = lambda: container.update(handler=cold_start())
    monkeypatch.setenv("STUDIO_ORIGIN", server.url)
    yield server
    server.stop()


@pytest.fixture
def page(browser, studio, request):
    with signed_in_page(browser, f"{studio.url}/studio/knowledge?agent={A}", "#concepts tbody tr",
                        f"{request.node.name}.png") as page:
        yield page


# ------------------------------------------------------------------ `./run publish-studio`

@pytest.fixture
def deployed(moto_endpoint):
    """A stack with the outputs the real template has, on moto (CloudFormation, S3, CloudFront)."""
    clients = {name: boto3.client(name, endpoint_url=moto_endpoint, region_name="us-east-1")
               for name in ("cloudformation", "s3", "cloudfront")}
    distribution = clients["cloudfront"].create_distribution(DistributionConfig={
        "CallerReference": uuid.uuid4().hex, "Comment": "studio", "Enabled": True,
        "Origins": {"Quantity": 1, "Items": [{"Id": "o", "DomainName": "studio.s3.amazonaws.com",
                                              "S3OriginConfig": {"OriginAccessIdentity": ""}}]},
        "DefaultCacheBehavior": {"TargetOriginId": "o", "ViewerProtocolPolicy": "redirect-to-https",
                                 "CachePolicyId": "658327ea-f89d-4fab-a63d-7e88639e58f6"}})["Distribution"]
    stack = f"knowledge-{uuid.uuid4().hex[:8]}"
    template = {"Resources": {"StudioBucket": {"Type": "AWS::S3::Bucket"}}, "Outputs": {
        "StudioBucketName": {"Value": {"Ref": "StudioBucket"}},
        "StudioUrl": {"Value": f"https://{distribution['DomainName']}"},
        "StudioApiUrl": {"Value": "https://abc123.execute-api.us-east-1.amazonaws.com"},
        "StudioDistributionId": {"Value": distribution["Id"]},
        "SignInBaseUrl": {"Value": "https://knowledge-123456789012.auth.us-east-1.amazoncognito.com"},
        "OperatorsUserPoolClientId": {"Value": "client123"}}}
    clients["cloudformation"].create_stack(StackName=stack, TemplateBody=json.dumps(template))
    return clients, stack, distribution
