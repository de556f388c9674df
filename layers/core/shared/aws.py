"""boto3 clients, created once per container; they honour AWS_ENDPOINT_URL like any boto3 client."""

from __future__ import annotations

import functools
from typing import Any

import boto3
from botocore.config import Config

_CONFIG = Config(
    retries={"mode": "standard", "max_attempts": 4},
    connect_timeout=3,
    read_timeout=15,
    max_pool_connections=32,
)


SERVICE_CONFIG = {
    # One attempt per call: shared.awscall retries S3 itself, within the invocation's deadline
    # (botocore's loop knows no deadline, and its retry quota drains in a long-lived container).
    "s3": _CONFIG.merge(Config(retries={"mode": "standard", "total_max_attempts": 1}, read_timeout=5)),
    # A model call can take far longer than a storage call.
    # One attempt, 30 s a read: shared.model's loop retries within the deadline, and an attempt it
    # abandons at the deadline must not keep a connection for minutes.
    "bedrock-runtime": _CONFIG.merge(Config(read_timeout=30, retries={"mode": "standard", "total_max_attempts": 1})),
}


@functools.lru_cache(maxsize=None)
def client(service: str) -> Any:
    """One client per service per process; boto3 clients are thread-safe."""
    return boto3.session.Session().client(service, config=SERVICE_CONFIG.get(service, _CONFIG))
