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


def moto_versions(bucket, key):
    from knowledge_dev.snapshot import moto_bucket

    return moto_bucket(bucket)[1].keys.getlist(key)


def test_a_version_deleted_while_the_mirror_reads_it_is_left_out_not_fatal(s3, tmp_path):
    bucket = new_bucket(s3)
    s3.put_object(Bucket=bucket, Key="agents/default/a/concepts/troca.md", Body=b"v1")
    s3.put_object(Bucket=bucket, Key="facts/default/a/idle/sess_1", Body=b"idle")
    # The distiller removing an idle marker as the mirror reads it: moto has disposed of its content.
    moto_versions(bucket, "facts/default/a/idle/sess_1")[0].dispose()
    mirror = BucketSnapshot(s3, bucket, tmp_path)
    assert mirror.save()  # before: NoSuchVersion escaped and stopped the local stack
    manifest = (tmp_path / "manifest.json").read_text()
    assert "troca.md" in manifest and "sess_1" not in manifest
    assert [blob.read_bytes() for blob in (tmp_path / "blobs").iterdir()] == [b"v1"]


def test_a_save_writes_only_what_changed_and_a_restart_restores_every_version_as_it_was(s3, tmp_path):
    bucket = new_bucket(s3)
    key = "agents/default/a/concepts/troca.md"
    s3.put_object(Bucket=bucket, Key=key, Body=b"v1", Metadata={"actor": "engine"},
                  ContentType="text/markdown; charset=utf-8")
    mirror = BucketSnapshot(s3, bucket, tmp_path)
    assert mirror.save()
    manifest = (tmp_path / "manifest.json").read_bytes()
    assert not mirror.save()  # nothing changed: nothing written
    s3.put_object(Bucket=bucket, Key=key, Body=b"v2", Metadata={"actor": "operator:ana"},
                  ContentType="text/markdown; charset=utf-8")
    s3.put_object(Bucket=bucket, Key="agents/default/a/concepts/prazo.md", Body=b"p1")
    s3.delete_object(Bucket=bucket, Key="agents/default/a/concepts/prazo.md")
    assert mirror.save()
    # The manifest is not written again: the three changes are appended, one line each.
    assert (tmp_path / "manifest.json").read_bytes() == manifest
    assert len((tmp_path / "changes.jsonl").read_text().splitlines()) == 3
    before = s3.list_object_versions(Bucket=bucket)

    restarted = new_bucket(s3)  # a fresh moto, as after a restart
    restored = BucketSnapshot(s3, restarted, tmp_path)
    assert restored.load() == 4
    assert not restored.save()
    after = s3.list_object_versions(Bucket=restarted)
    # Every version and delete marker back with its own id and time, newest first per key.
    for kind in ("Versions", "DeleteMarkers"):
        assert [(v["Key"], v["VersionId"], v["IsLatest"], v["LastModified"]) for v in after.get(kind, [])] == [
            (v["Key"], v["VersionId"], v["IsLatest"], v["LastModified"]) for v in before.get(kind, [])]
    current = s3.get_object(Bucket=restarted, Key=key)
    assert (current["Body"].read(), current["Metadata"], current["ContentType"]) == (
        b"v2", {"actor": "operator:ana"}, "text/markdown; charset=utf-8")

    def bodies(name):
        return [s3.get_object(Bucket=name, Key=v["Key"], VersionId=v["VersionId"])["Body"].read()
                for v in s3.list_object_versions(Bucket=name)["Versions"]]

    assert bodies(restarted) == bodies(bucket)
    # The restored state is the manifest again (the changes folded in), and a save finds nothing new.
    assert not (tmp_path / "changes.jsonl").exists()


def test_a_mirror_of_the_earlier_http_format_is_restored(s3, tmp_path):
    import hashlib
    import json

    bucket = new_bucket(s3)
    digest = hashlib.sha256(b"v1").hexdigest()
    (tmp_path / "blobs").mkdir()
    (tmp_path / "blobs" / digest).write_bytes(b"v1")
    (tmp_path / "manifest.json").write_text(json.dumps({"bucket": "old", "keys": {"agents/default/a/concepts/troca.md": [
        {"version_id": "abc", "blob": digest, "metadata": {"actor": "engine"}, "content_type": "text/markdown"},
        {"marker": True, "version_id": "def"}]}}))
    assert BucketSnapshot(s3, bucket, tmp_path).load() == 2
    answer = s3.get_object(Bucket=bucket, Key="agents/default/a/concepts/troca.md", VersionId="abc")
    assert (answer["Body"].read(), answer["Metadata"], answer["ContentType"]) == (b"v1", {"actor": "engine"},
                                                                                  "text/markdown")
    assert s3.list_object_versions(Bucket=bucket)["DeleteMarkers"][0]["IsLatest"]
