"""Read template.yaml so the local stack creates exactly the resources the template declares."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import yaml

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "template.yaml"


class _CfnLoader(yaml.SafeLoader):
    """safe_load that reads CloudFormation short forms (!Ref X, !GetAtt A.B, !Sub ...) as data."""


def _short_form(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> dict:
    if isinstance(node, yaml.ScalarNode):
        value: Any = loader.construct_scalar(node)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_mapping(node, deep=True)
    if suffix == "Ref":
        return {"Ref": value}
    if suffix == "GetAtt" and isinstance(value, str):
        value = value.split(".", 1)
    return {f"Fn::{suffix}": value}


_CfnLoader.add_multi_constructor("!", _short_form)


def load_template(path: Path = TEMPLATE) -> dict:
    return yaml.load(path.read_text(encoding="utf-8"), Loader=_CfnLoader)  # noqa: S506 - SafeLoader subclass


def _kebab(logical_id: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "-", logical_id).lower()


def env_references(template: dict) -> dict[str, str]:
    """Environment variable -> the logical id it names with !Ref, from Globals, every
    function, and the template's EngineEnvironment metadata (what the engine is given)."""
    refs: dict[str, str] = {}
    sources = [template.get("Globals", {}).get("Function", {}).get("Environment", {}).get("Variables", {}),
               template.get("Metadata", {}).get("EngineEnvironment", {})]
    for resource in template.get("Resources", {}).values():
        if resource.get("Type") == "AWS::Serverless::Function":
            sources.append(resource.get("Properties", {}).get("Environment", {}).get("Variables", {}))
    for variables in sources:
        for name, value in variables.items():
            if isinstance(value, dict) and set(value) == {"Ref"}:
                refs[name] = value["Ref"]
    return refs



@dataclass(frozen=True)
class BucketSpec:
    logical_id: str
    env_var: str
    versioned: bool
    lifecycle_rules: list[dict] = field(default_factory=list)
    encrypted: bool = False

    @property
    def local_name(self) -> str:
        return "local-" + _kebab(self.logical_id)


def _resolve(value: Any, parameters: dict) -> Any:
    if isinstance(value, dict) and set(value) == {"Ref"} and value["Ref"] in parameters:
        return parameters[value["Ref"]].get("Default")
    return value


def _lifecycle_rule(rule: dict, parameters: dict) -> dict:
    """A CloudFormation lifecycle rule in the shape of S3's PutBucketLifecycleConfiguration."""
    out: dict[str, Any] = {"ID": rule.get("Id", "rule"), "Status": rule.get("Status", "Enabled"),
                           "Filter": {"Prefix": rule.get("Prefix", "")}}
    if "ExpirationInDays" in rule:
        out["Expiration"] = {"Days": int(_resolve(rule["ExpirationInDays"], parameters))}
    if "NoncurrentVersionExpiration" in rule:
        expiration = rule["NoncurrentVersionExpiration"]
        out["NoncurrentVersionExpiration"] = {"NoncurrentDays": int(_resolve(expiration["NoncurrentDays"], parameters))}
        if "NewerNoncurrentVersions" in expiration:
            kept = int(_resolve(expiration["NewerNoncurrentVersions"], parameters))
            out["NoncurrentVersionExpiration"]["NewerNoncurrentVersions"] = kept
    if "AbortIncompleteMultipartUpload" in rule:
        days = rule["AbortIncompleteMultipartUpload"]["DaysAfterInitiation"]
        out["AbortIncompleteMultipartUpload"] = {"DaysAfterInitiation": int(_resolve(days, parameters))}
    return out


def bucket_specs(template: dict | None = None) -> list[BucketSpec]:
    """Every S3 bucket the template declares, with the environment variable that names it."""
    template = template or load_template()
    resources = template.get("Resources", {})
    parameters = template.get("Parameters", {})
    by_bucket = {logical_id: name for name, logical_id in env_references(template).items()}
    specs = []
    for logical_id, resource in resources.items():
        if resource.get("Type") != "AWS::S3::Bucket":
            continue
        if logical_id not in by_bucket:
            continue  # a bucket no function reads (the studio's site bucket, say)
        props = resource.get("Properties", {})
        rules = props.get("LifecycleConfiguration", {}).get("Rules", [])
        specs.append(BucketSpec(
            logical_id=logical_id,
            env_var=by_bucket[logical_id],
            versioned=props.get("VersioningConfiguration", {}).get("Status") == "Enabled",
            lifecycle_rules=[_lifecycle_rule(rule, parameters) for rule in rules],
            encrypted="BucketEncryption" in props,
        ))
    return specs


def create_buckets(s3: Any, specs: list[BucketSpec]) -> dict[str, str]:
    """Create (or re-apply settings to) each bucket; returns env var -> bucket name."""
    names = {}
    for spec in specs:
        try:
            s3.create_bucket(Bucket=spec.local_name)
        except s3.exceptions.BucketAlreadyOwnedByYou:
            pass
        if spec.versioned:
            s3.put_bucket_versioning(Bucket=spec.local_name, VersioningConfiguration={"Status": "Enabled"})
        if spec.lifecycle_rules:
            s3.put_bucket_lifecycle_configuration(
                Bucket=spec.local_name, LifecycleConfiguration={"Rules": spec.lifecycle_rules})
        if spec.encrypted:
            s3.put_bucket_encryption(Bucket=spec.local_name, ServerSideEncryptionConfiguration={
                "Rules": [{"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}]})
        names[spec.env_var] = spec.local_name
    return names


@dataclass(frozen=True)
class QueueSpec:
    logical_id: str
    attributes: dict
    dead_letter: Optional[str] = None  # logical id of the redrive target
    max_receive_count: int = 0

    @property
    def fifo(self) -> bool:
        return self.attributes.get("FifoQueue") == "true"

    @property
    def local_name(self) -> str:
        return "local-" + _kebab(self.logical_id) + (".fifo" if self.fifo else "")


_QUEUE_ATTRIBUTES = ("FifoQueue", "ContentBasedDeduplication", "DeduplicationScope", "FifoThroughputLimit",
                     "VisibilityTimeout", "MessageRetentionPeriod", "DelaySeconds", "ReceiveMessageWaitTimeSeconds")


def queue_specs(template: dict | None = None) -> list[QueueSpec]:
    """Every SQS queue the template declares, dead-letter queues first."""
    template = template or load_template()
    parameters = template.get("Parameters", {})
    specs = []
    for logical_id, resource in template.get("Resources", {}).items():
        if resource.get("Type") != "AWS::SQS::Queue":
            continue
        props = resource.get("Properties", {})
        attributes = {}
        for name in _QUEUE_ATTRIBUTES:
            if name in props:
                value = _resolve(props[name], parameters)
                attributes[name] = str(value).lower() if isinstance(value, bool) else str(value)
        redrive = props.get("RedrivePolicy") or {}
        target = redrive.get("deadLetterTargetArn", {}).get("Fn::GetAtt", [None])[0] if redrive else None
        count = int(_resolve(redrive.get("maxReceiveCount", 0), parameters) or 0) if redrive else 0
        specs.append(QueueSpec(logical_id, attributes, target, count))
    return sorted(specs, key=lambda q: q.dead_letter is not None)


def create_queues(sqs: Any, specs: list[QueueSpec]) -> dict[str, str]:
    """Create each queue (dead-letter targets first); returns logical id -> queue URL."""
    urls: dict[str, str] = {}
    for spec in specs:
        attributes = dict(spec.attributes)
        if spec.dead_letter:
            arn = sqs.get_queue_attributes(QueueUrl=urls[spec.dead_letter], AttributeNames=["QueueArn"])
            attributes["RedrivePolicy"] = json.dumps({
                "deadLetterTargetArn": arn["Attributes"]["QueueArn"], "maxReceiveCount": spec.max_receive_count})
        urls[spec.logical_id] = sqs.create_queue(QueueName=spec.local_name, Attributes=attributes)["QueueUrl"]
    return urls


def event_bus_ids(template: dict | None = None) -> list[str]:
    template = template or load_template()
    return [logical_id for logical_id, resource in template.get("Resources", {}).items()
            if resource.get("Type") == "AWS::Events::EventBus"]
