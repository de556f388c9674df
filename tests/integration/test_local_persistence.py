"""The local stack's disk mirror of its buckets (devstack/knowledge_dev/snapshot.py): history
survives a restart, and what a purge removed from S3 is removed from the disk too."""

from __future__ import annotations

from helpers.aws import new_bucket

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


class DeletedWhileSaving:
    """S3 whose object is deleted by someone else between the mirror's listing and its read, as
    the stack's handlers do while it saves (the distiller removing an idle marker)."""

    def __init__(self, s3, bucket: str, key: str):
        self._s3, self._bucket, self._key = s3, bucket, key

    def __getattr__(self, name):
        return getattr(self._s3, name)

    def get_object(self, **kwargs):
        if kwargs["Key"] == self._key:
            versions = self._s3.list_object_versions(Bucket=self._bucket, Prefix=self._key)["Versions"]
            for version in versions:
                self._s3.delete_object(Bucket=self._bucket, Key=self._key, VersionId=version["VersionId"])
        return self._s3.get_object(**kwargs)


def test_an_object_deleted_between_the_listing_and_its_read_is_left_out_not_fatal(s3, tmp_path):
    bucket = new_bucket(s3)
    s3.put_object(Bucket=bucket, Key="agents/default/a/concepts/troca.md", Body=b"v1")
    s3.put_object(Bucket=bucket, Key="facts/default/a/idle/sess_1", Body=b"idle")
    mirror = BucketSnapshot(DeletedWhileSaving(s3, bucket, "facts/default/a/idle/sess_1"), bucket, tmp_path)
    assert mirror.save()  # before: NoSuchVersion escaped and stopped the local stack
    manifest = (tmp_path / "manifest.json").read_text()
    assert "troca.md" in manifest and "sess_1" not in manifest
    assert [blob.read_bytes() for blob in (tmp_path / "blobs").iterdir()] == [b"v1"]
