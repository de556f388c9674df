"""Read template.yaml so the local stack creates exactly the resources the template declares."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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


@dataclass(frozen=True)
class BucketSpec:
    logical_id: str
    env_var: str
    versioned: bool
    lifecycle_rules: list[dict] = field(default_factory=list)
    encrypted: bool = False

    @property
    def local_name(self) -> str:
        return "local-" + re.sub(r"(?<!^)(?=[A-Z])", "-", self.logical_id).lower()


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
        days = rule["NoncurrentVersionExpiration"].get("NoncurrentDays")
        out["NoncurrentVersionExpiration"] = {"NoncurrentDays": int(_resolve(days, parameters))}
    if "AbortIncompleteMultipartUpload" in rule:
        days = rule["AbortIncompleteMultipartUpload"]["DaysAfterInitiation"]
        out["AbortIncompleteMultipartUpload"] = {"DaysAfterInitiation": int(_resolve(days, parameters))}
    return out


def bucket_specs(template: dict | None = None) -> list[BucketSpec]:
    """Every S3 bucket the template declares, with the environment variable that names it."""
    template = template or load_template()
    resources = template.get("Resources", {})
    parameters = template.get("Parameters", {})
    env = template.get("Globals", {}).get("Function", {}).get("Environment", {}).get("Variables", {})
    by_bucket = {value["Ref"]: name for name, value in env.items() if isinstance(value, dict) and "Ref" in value}
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
