"""The local stack's disk mirror of its buckets (devstack/knowledge_dev/snapshot.py): history
survives a restart, and what a purge removed from S3 is removed from the disk too."""

from __future__ import annotations

from conftest import new_bucket
from knowledge_dev.snapshot import BucketSnapshot

CUSTOMER_TURN = b'{"customer_id": "cus_77120", "messages": [{"role": "user", "content": "meu orcamento e R$ 2.500"}]}'


def test_history_survives_a_restart_and_a_purged_object_leaves_no_blob_on_disk(s3, tmp_path):
    bucket = new_bucket(s3)
    s3.put_object(Bucket=bucket, Key="agents/default/a/concepts/troca.md", Body=b"v1")
    s3.put_object(Bucket=bucket, Key="agents/default/a/concepts/troca.md", Body=b"v2")
    s3.put_object(Bucket=bucket, Key="default/a/turns/t1.json", Body=CUSTOMER_TURN)
    mirror = BucketSnapshot(s3, bucket, tmp_path)
    assert mirror.save()
    assert len(list((tmp_path / "blobs").iterdir())) == 3

    # forget-customer removes every version of the turn: the next save forgets its content too.
    for version in s3.list_object_versions(Bucket=bucket, Prefix="default/a/turns/")["Versions"]:
        s3.delete_object(Bucket=bucket, Key=version["Key"], VersionId=version["VersionId"])
    assert mirror.save()
    on_disk = b"".join(blob.read_bytes() for blob in (tmp_path / "blobs").iterdir())
    assert b"cus_77120" not in on_disk and b"cus_77120" not in (tmp_path / "manifest.json").read_bytes()
    assert sorted(blob.read_bytes() for blob in (tmp_path / "blobs").iterdir()) == [b"v1", b"v2"]

    restarted = new_bucket(s3)
    assert BucketSnapshot(s3, restarted, tmp_path).load() == 2
    versions = s3.list_object_versions(Bucket=restarted)["Versions"]
    assert [v["Key"] for v in versions] == ["agents/default/a/concepts/troca.md"] * 2
    current = s3.get_object(Bucket=restarted, Key="agents/default/a/concepts/troca.md")["Body"].read()
    assert current == b"v2"
