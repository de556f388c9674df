"""`./run publish-studio --stack NAME`: put the built studio page and its config on AWS.

After `sam deploy`, this reads the stack's Outputs, writes the pages' `config.json` (the
API URL and the Cognito sign-in settings), uploads the pages (`studio/knowledge`,
`studio/facts`) to the studio bucket under `studio/` with the right content types, and
invalidates the CloudFront cache. The Facts page signs in through the same app client and
comes back to itself: its redirect is `facts` beside the knowledge page's `redirectUri`.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any, Optional, Sequence

from .template import ROOT

DIST = ROOT / "studio_web" / "dist"
# key under studio/ -> (file in dist, content type, cache-control)
FILES = {
    "studio/knowledge": ("index.html", "text/html; charset=utf-8", "no-cache"),
    "studio/app.js": ("app.js", "text/javascript; charset=utf-8", "max-age=300"),
    "studio/style.css": ("style.css", "text/css; charset=utf-8", "max-age=300"),
    "studio/favicon.svg": ("favicon.svg", "image/svg+xml", "max-age=86400"),
    "studio/facts": ("facts.html", "text/html; charset=utf-8", "no-cache"),
    "studio/facts.js": ("facts.js", "text/javascript; charset=utf-8", "max-age=300"),
    "studio/facts.css": ("facts.css", "text/css; charset=utf-8", "max-age=300"),
}
REQUIRED = ("StudioUrl", "StudioApiUrl", "StudioBucketName", "StudioDistributionId")


class PublishError(Exception):
    pass


def stack_outputs(cloudformation: Any, stack: str) -> dict[str, str]:
    try:
        found = cloudformation.describe_stacks(StackName=stack)["Stacks"]
    except Exception as exc:  # noqa: BLE001 - botocore's error says what is wrong (no stack, no credentials)
        raise PublishError(f"cannot read stack {stack!r}: {exc}") from None
    outputs = {o["OutputKey"]: o["OutputValue"] for o in found[0].get("Outputs", [])}
    missing = [key for key in REQUIRED if not outputs.get(key)]
    if missing:
        raise PublishError(f"stack {stack!r} has no output {', '.join(missing)}: deploy this template first")
    return outputs


def page_config(outputs: dict[str, str], client_id: Optional[str] = None,
                sign_in_base_url: Optional[str] = None) -> dict[str, Any]:
    """The page's config.json: where its API is and how operators sign in (Cognito, PKCE)."""
    base = (sign_in_base_url or outputs.get("SignInBaseUrl") or "").rstrip("/")
    client = client_id or outputs.get("OperatorsUserPoolClientId")
    if not base or not client:
        raise PublishError("no Cognito sign-in in the stack outputs: pass --sign-in-base-url and --client-id "
                           "(for your own identity provider's hosted sign-in)")
    studio = outputs["StudioUrl"].rstrip("/")
    return {"apiBase": outputs["StudioApiUrl"].rstrip("/"),
            "signIn": {"authorizeUrl": f"{base}/oauth2/authorize", "tokenUrl": f"{base}/oauth2/token",
                       "clientId": client, "redirectUri": f"{studio}/studio/knowledge", "scope": "openid email"}}


def publish(s3: Any, cloudfront: Any, outputs: dict[str, str], config: dict[str, Any],
            dist: Path = DIST) -> list[str]:
    """Upload the page and its config; returns the keys written."""
    missing = sorted({name for name, _, _ in FILES.values() if not (dist / name).is_file()})
    if missing:
        raise PublishError(f"the pages are not built: no {', '.join(missing)} in {dist} (./run builds them)")
    bucket = outputs["StudioBucketName"]
    written = []
    for key, (name, content_type, cache) in FILES.items():
        s3.put_object(Bucket=bucket, Key=key, Body=(dist / name).read_bytes(), ContentType=content_type,
                      CacheControl=cache)
        written.append(key)
    s3.put_object(Bucket=bucket, Key="studio/config.json", Body=json.dumps(config, indent=1).encode(),
                  ContentType="application/json", CacheControl="no-cache")
    written.append("studio/config.json")
    cloudfront.create_invalidation(DistributionId=outputs["StudioDistributionId"], InvalidationBatch={
        "Paths": {"Quantity": 1, "Items": ["/studio/*"]}, "CallerReference": f"publish-{time.time_ns()}"})
    return written


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="publish-studio", description=__doc__.splitlines()[0])
    parser.add_argument("--stack", required=True, help="the stack name given to sam deploy")
    parser.add_argument("--region", help="default: your AWS configuration's region")
    parser.add_argument("--client-id", help="app client id, when you bring your own identity provider")
    parser.add_argument("--sign-in-base-url", help="hosted sign-in base URL, with your own identity provider")
    args = parser.parse_args(argv)
    import boto3

    session = boto3.session.Session(region_name=args.region)
    try:
        outputs = stack_outputs(session.client("cloudformation"), args.stack)
        config = page_config(outputs, args.client_id, args.sign_in_base_url)
        written = publish(session.client("s3"), session.client("cloudfront"), outputs, config)
    except PublishError as exc:
        print(f"publish-studio: {exc}", file=sys.stderr)
        return 1
    print(f"published {len(written)} files; open {outputs['StudioUrl']}/studio/knowledge?agent=<name> "
          f"and {outputs['StudioUrl']}/studio/facts?agent=<name>")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
