"""The template's customer managed keys: the alarm topic's (CloudWatch publishes to it) and the Facts
key secret's (only the functions that read the secret may decrypt it, and only through Secrets
Manager). What checkov's CKV_AWS_26 and CKV_AWS_149 ask, and what they do not check: the key policies."""

from __future__ import annotations

from helpers.operations import RESOURCES

ROOT = {"Fn::Sub": "arn:${AWS::Partition}:iam::${AWS::AccountId}:root"}
CRYPTO = {"kms:Encrypt", "kms:Decrypt", "kms:ReEncrypt*", "kms:ReEncryptFrom", "kms:ReEncryptTo",
          "kms:GenerateDataKey", "kms:GenerateDataKey*", "kms:GenerateDataKeyWithoutPlaintext"}


def statements(key: str) -> list[dict]:
    return RESOURCES[key]["Properties"]["KeyPolicy"]["Statement"]


def via(service: str) -> dict:
    return {"kms:ViaService": {"Fn::Sub": f"{service}.${{AWS::Region}}.amazonaws.com"},
            "kms:CallerAccount": {"Ref": "AWS::AccountId"}}


def test_the_alarm_topic_and_the_facts_secret_are_under_their_own_rotated_keys():
    assert RESOURCES["AlarmTopic"]["Properties"]["KmsMasterKeyId"] == {"Fn::GetAtt": ["AlarmTopicKey", "Arn"]}
    assert RESOURCES["FactsKeySecret"]["Properties"]["KmsKeyId"] == {"Fn::GetAtt": ["FactsSecretKey", "Arn"]}
    for key in ("AlarmTopicKey", "FactsSecretKey"):
        assert RESOURCES[key]["Type"] == "AWS::KMS::Key"
        assert RESOURCES[key]["Properties"]["EnableKeyRotation"] is True, key
    # The topic's key exists exactly when the topic does; the secret is kept, and so is what decrypts it.
    assert RESOURCES["AlarmTopicKey"]["Condition"] == RESOURCES["AlarmTopic"]["Condition"]
    for policy in ("DeletionPolicy", "UpdateReplacePolicy"):
        assert RESOURCES["FactsSecretKey"][policy] == RESOURCES["FactsKeySecret"][policy] == "Retain"


def test_no_key_policy_grants_everything_or_anyone_and_the_account_uses_a_key_only_through_its_service():
    for key, service in (("AlarmTopicKey", "sns"), ("FactsSecretKey", "secretsmanager")):
        for st in statements(key):
            assert st["Effect"] == "Allow", (key, st["Sid"])
            actions = set(st["Action"])
            assert "kms:*" not in actions and "*" not in actions, (key, st["Sid"])
            assert st["Principal"] != "*" and st["Principal"].get("AWS") in (None, ROOT), (key, st["Sid"])
            if st["Principal"].get("AWS") == ROOT and actions & CRYPTO:
                assert st["Condition"] == {"StringEquals": via(service)}, (key, st["Sid"])
        # The account can always administer the key (never locked out), without using it.
        (admin,) = [st for st in statements(key) if "kms:PutKeyPolicy" in st["Action"] or "kms:Put*" in st["Action"]]
        assert admin["Principal"] == {"AWS": ROOT} and not set(admin["Action"]) & CRYPTO and "Condition" not in admin


def test_cloudwatch_alarms_of_this_account_may_publish_to_the_encrypted_topic_and_no_other_service_may():
    services = [st for st in statements("AlarmTopicKey") if "Service" in st["Principal"]]
    (cloudwatch,) = services
    assert cloudwatch["Principal"] == {"Service": "cloudwatch.amazonaws.com"}
    assert set(cloudwatch["Action"]) == {"kms:Decrypt", "kms:GenerateDataKey*"}
    assert cloudwatch["Condition"] == {"StringEquals": {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}}
    assert not [st for st in statements("FactsSecretKey") if "Service" in st["Principal"]]
    # The topic's own policy still lets them publish.
    (publish,) = [st for st in RESOURCES["AlarmTopicPolicy"]["Properties"]["PolicyDocument"]["Statement"]
                  if st["Effect"] == "Allow"]
    assert publish["Principal"] == {"Service": "cloudwatch.amazonaws.com"} and publish["Action"] == "sns:Publish"


def _role_statements(resource: dict) -> list[dict]:
    return [st for policy in resource["Properties"].get("Policies", []) if isinstance(policy, dict)
            for st in policy.get("Statement", []) if isinstance(st, dict)]


def test_only_the_functions_that_read_the_facts_secret_may_decrypt_it_and_only_through_secrets_manager():
    readers, decrypters = set(), set()
    for logical_id, resource in RESOURCES.items():
        if resource["Type"] != "AWS::Serverless::Function":
            continue
        variables = resource["Properties"].get("Environment", {}).get("Variables", {})
        if "FACTS_KEY_SECRET_ARN" in variables:
            readers.add(logical_id)
        for st in _role_statements(resource):
            if "Action" not in st:  # an !If: neither branch reaches a key
                assert "kms:" not in str(st), logical_id
                continue
            actions = st["Action"] if isinstance(st["Action"], list) else [st["Action"]]
            if not any(a.startswith("kms:") for a in actions):
                continue
            decrypters.add(logical_id)
            assert actions == ["kms:Decrypt"], logical_id
            assert st["Resource"] == {"Fn::GetAtt": ["FactsSecretKey", "Arn"]}, logical_id
            assert st["Condition"] == {"StringEquals": {"kms:ViaService": {
                "Fn::Sub": "secretsmanager.${AWS::Region}.amazonaws.com"}}}, logical_id
    assert readers == decrypters == {"DistillFunction", "FactsApiFunction"}
    # No other resource's policy reaches a key.
    for logical_id, resource in RESOURCES.items():
        if resource["Type"] in ("AWS::IAM::Role", "AWS::IAM::Policy", "AWS::IAM::ManagedPolicy"):
            assert "kms:" not in str(resource), logical_id
