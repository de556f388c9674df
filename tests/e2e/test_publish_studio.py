"""`./run publish-studio`: stack outputs in, the page and its config in the studio bucket, the cache invalidated."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from helpers.paths import ROOT
from helpers.skips import skip_unless_present

from knowledge_dev.publish import FILES, PublishError, page_config, publish, stack_outputs

PAGE = ROOT / "studio_web" / "dist" / "index.html"
pytestmark = skip_unless_present({"the built page (./run builds it with npm)": PAGE.exists()})


def test_publish_uploads_the_page_and_its_config_and_invalidates(deployed):
    clients, stack, distribution = deployed
    outputs = stack_outputs(clients["cloudformation"], stack)
    written = publish(clients["s3"], clients["cloudfront"], outputs, page_config(outputs))
    bucket = outputs["StudioBucketName"]
    assert sorted(written) == sorted([*FILES, "studio/config.json"])
    page = clients["s3"].get_object(Bucket=bucket, Key="studio/knowledge")
    assert page["ContentType"] == "text/html; charset=utf-8" and page["Body"].read() == PAGE.read_bytes()
    config = json.loads(clients["s3"].get_object(Bucket=bucket, Key="studio/config.json")["Body"].read())
    assert config == {
        "apiBase": "https://abc123.execute-api.us-east-1.amazonaws.com",
        "signIn": {"authorizeUrl": "https://knowledge-123456789012.auth.us-east-1.amazoncognito.com/oauth2/authorize",
                   "tokenUrl": "https://knowledge-123456789012.auth.us-east-1.amazoncognito.com/oauth2/token",
                   "clientId": "client123", "redirectUri": f"https://{distribution['DomainName']}/studio/knowledge",
                   "scope": "openid email"}}
    invalidations = clients["cloudfront"].list_invalidations(DistributionId=distribution["Id"])
    assert invalidations["InvalidationList"]["Quantity"] == 1


def test_a_missing_stack_or_output_is_a_clear_error(deployed):
    clients, _, _ = deployed
    with pytest.raises(PublishError, match="cannot read stack"):
        stack_outputs(clients["cloudformation"], "no-such-stack")
    with pytest.raises(PublishError, match="--sign-in-base-url"):
        page_config({"StudioUrl": "https://x", "StudioApiUrl": "https://y"})


def test_the_command_exits_non_zero_with_a_message(moto_endpoint):
    import os

    env = {**os.environ, "AWS_ENDPOINT_URL": moto_endpoint, "AWS_DEFAULT_REGION": "us-east-1"}
    result = subprocess.run([sys.executable, "-m", "knowledge_dev.publish", "--stack", "no-such-stack"], cwd=ROOT,
                            env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 1 and "cannot read stack 'no-such-stack'" in result.stderr
