"""moto's server on 127.0.0.1 for the tests and benchmarks, and the small helpers they share."""

from __future__ import annotations

import contextlib
import logging
import os
import socket
from typing import Any, Iterator

_AWS_ENV = ("AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_DEFAULT_REGION")


def journal_lifecycle_rule() -> dict:
    """template.yaml's `expire-change-journal` rule in S3's PutBucketLifecycleConfiguration shape:
    a journal entry's current version expires after the journal's retention, the version that
    leaves behind a day later (S3's least), and the delete marker then goes with it."""
    from knowledge.store.journal import JOURNAL_RETENTION_DAYS

    return {"ID": "expire-change-journal", "Status": "Enabled", "Filter": {"Prefix": "journal/"},
            "Expiration": {"Days": JOURNAL_RETENTION_DAYS},
            "NoncurrentVersionExpiration": {"NoncurrentDays": 1}}


def apply_journal_lifecycle(s3: Any, bucket: str) -> None:
    """Put the journal's rule on a local KNOWLEDGE_BUCKET beside the rules it already has."""
    try:
        rules = s3.get_bucket_lifecycle_configuration(Bucket=bucket)["Rules"]
    except s3.exceptions.ClientError:
        rules = []  # none yet
    rules = [rule for rule in rules if rule.get("ID") != "expire-change-journal"] + [journal_lifecycle_rule()]
    s3.put_bucket_lifecycle_configuration(Bucket=bucket, LifecycleConfiguration={"Rules": rules})


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextlib.contextmanager
def moto_server(credential: str = "local") -> Iterator[str]:
    """A moto server on a free port, with this process's boto3 pointed at it (AWS_ENDPOINT_URL
    and dummy credentials) until the block ends; yields the endpoint."""
    from moto.server import ThreadedMotoServer

    from shared.aws import client

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    saved = {key: os.environ.get(key) for key in _AWS_ENV}
    os.environ.update(dict(zip(_AWS_ENV, (endpoint, credential, credential, "us-east-1"))))
    client.cache_clear()  # clients made before now point elsewhere
    try:
        yield endpoint
    finally:
        server.stop()
        client.cache_clear()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value

