"""The fault proxy: transparent to boto3 when quiet, and S3's bad days exactly as botocore sees them."""

from __future__ import annotations

import http.client
import io
import socket
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError, ConnectionClosedError, EndpointConnectionError
from helpers.aws import new_bucket

from knowledge_dev.faults import (
    CONDITIONAL,
    CONFLICT,
    INTERNAL,
    RESET_AFTER,
    RESET_BEFORE,
    SLOWDOWN,
    FaultMix,
    FaultProxy,
    InvalidFaultSpec,
    Rule,
)

ONE_ATTEMPT = Config(retries={"total_max_attempts": 1})


@pytest.fixture
def proxy(moto_endpoint):
    with FaultProxy(moto_endpoint, seed=7) as running:
        yield running


def s3_via(proxy: FaultProxy, config: Config = ONE_ATTEMPT):
    return boto3.client("s3", endpoint_url=proxy.url, region_name="us-east-1", config=config)


def outcome(call) -> str:
    """What the caller saw: "ok", the error code, or "closed" for a dropped connection."""
    try:
        call()
        return "ok"
    except ClientError as error:
        return error.response["Error"]["Code"]
    except ConnectionClosedError:
        return "closed"


def stable(value, versions: dict):
    """A response without what differs between two runs (request ids, dates, version ids)."""
    if isinstance(value, dict):
        return {k: stable(v, versions) for k, v in value.items()
                if k not in ("ResponseMetadata", "LastModified", "Name", "Bucket")}
    if isinstance(value, list):
        return [stable(v, versions) for v in value]
    if isinstance(value, str) and value in versions:
        return versions[value]
    return value


def s3_scenario(s3, bucket: str) -> list:
    """Puts, gets, heads, lists, versions, conditional puts and deletes, with what each answered."""
    versions: dict[str, str] = {}
    seen = []

    def record(name, call):
        try:
            answer = call()
        except ClientError as error:
            answer = {"error": error.response["Error"]["Code"],
                      "status": error.response["ResponseMetadata"]["HTTPStatusCode"]}
        if isinstance(answer, dict) and "Body" in answer:
            answer = {**answer, "Body": answer["Body"].read()}
        for key in ("VersionId", "Versions", "DeleteMarkers"):
            for item in ([answer] if key == "VersionId" else answer.get(key, [])) if isinstance(answer, dict) else []:
                if item.get("VersionId"):
                    versions.setdefault(item["VersionId"], f"v{len(versions)}")
        seen.append((name, stable(answer, versions)))
        return answer

    first = record("put", lambda: s3.put_object(Bucket=bucket, Key="agents/loja/frete.md", Body=b"frete gratis",
                                                ContentType="text/markdown", Metadata={"kind": "fact"}))
    record("put file", lambda: s3.put_object(Bucket=bucket, Key="agents/loja/cep.md",
                                             Body=io.BytesIO("CEP 13010-000 é Campinas".encode())))
    record("overwrite", lambda: s3.put_object(Bucket=bucket, Key="agents/loja/frete.md", Body=b"frete R$199"))
    record("get", lambda: s3.get_object(Bucket=bucket, Key="agents/loja/frete.md"))
    record("get old", lambda: s3.get_object(Bucket=bucket, Key="agents/loja/frete.md", VersionId=first["VersionId"]))
    record("head", lambda: s3.head_object(Bucket=bucket, Key="agents/loja/cep.md"))
    record("head missing", lambda: s3.head_object(Bucket=bucket, Key="agents/loja/nada.md"))
    record("list", lambda: s3.list_objects_v2(Bucket=bucket, Prefix="agents/loja/"))
    record("create-only on existing", lambda: s3.put_object(Bucket=bucket, Key="agents/loja/cep.md", Body=b"x",
                                                            IfNoneMatch="*"))
    record("create-only on new", lambda: s3.put_object(Bucket=bucket, Key="agents/loja/novo.md", Body=b"novo",
                                                       IfNoneMatch="*"))
    etag = s3.head_object(Bucket=bucket, Key="agents/loja/frete.md")["ETag"]
    record("swap stale", lambda: s3.put_object(Bucket=bucket, Key="agents/loja/frete.md", Body=b"y",
                                               IfMatch='"0000"'))
    record("swap current", lambda: s3.put_object(Bucket=bucket, Key="agents/loja/frete.md", Body=b"frete R$249",
                                                 IfMatch=etag))
    record("delete", lambda: s3.delete_object(Bucket=bucket, Key="agents/loja/cep.md"))
    record("get deleted", lambda: s3.get_object(Bucket=bucket, Key="agents/loja/cep.md"))
    record("versions", lambda: s3.list_object_versions(Bucket=bucket, Prefix="agents/"))
    return seen


def test_without_faults_boto3_gets_through_the_proxy_exactly_what_it_gets_from_moto(proxy, s3):
    direct = s3_scenario(s3, new_bucket(s3))
    proxied = s3_scenario(s3_via(proxy), new_bucket(s3))

    assert proxied == direct
    assert dict(direct)["create-only on existing"] == {"error": "PreconditionFailed", "status": 412}
    assert dict(direct)["get old"]["Body"] == b"frete gratis"
    counters = proxy.counters
    assert counters.seen == counters.forwarded == len(proxy.journal) > 15
    assert counters.injected == 0


def test_a_chunked_request_body_reaches_s3_intact(proxy, s3):
    bucket = new_bucket(s3)
    signed_scope = {"Authorization": "AWS4-HMAC-SHA256 Credential=test/20260101/us-east-1/s3/aws4_request, "
                                     "SignedHeaders=host, Signature=00", "X-Amz-Content-SHA256": "UNSIGNED-PAYLOAD"}
    connection = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=5)
    connection.request("PUT", f"/{bucket}/chunked.md", body=iter([b"Oi, ", "tudo bem? Pedido #4821".encode()]),
                       headers=signed_scope, encode_chunked=True)
    assert connection.getresponse().read() == b""
    connection.close()

    assert s3.get_object(Bucket=bucket, Key="chunked.md")["Body"].read() == b"Oi, tudo bem? Pedido #4821"


def test_sqs_and_eventbridge_pass_untouched_while_every_s3_request_is_throttled(proxy, s3):
    bucket = new_bucket(s3)
    proxy.mix = FaultMix(slowdown=1.0)
    via_sqs = boto3.client("sqs", endpoint_url=proxy.url, region_name="us-east-1", config=ONE_ATTEMPT)
    via_events = boto3.client("events", endpoint_url=proxy.url, region_name="us-east-1", config=ONE_ATTEMPT)

    queue = via_sqs.create_queue(QueueName=f"q-{uuid.uuid4().hex[:8]}")["QueueUrl"]
    via_sqs.send_message(QueueUrl=queue, MessageBody="pedido 4821")
    assert via_sqs.receive_message(QueueUrl=queue)["Messages"][0]["Body"] == "pedido 4821"
    assert via_events.put_events(Entries=[{"Source": "knowledge", "DetailType": "t", "Detail": "{}"}])[
        "FailedEntryCount"] == 0
    assert outcome(lambda: s3_via(proxy).list_objects_v2(Bucket=bucket)) == "SlowDown"

    counters = proxy.counters
    assert counters.seen_by_service == {"sqs": 3, "events": 1, "s3": 1}
    assert counters.faults[SLOWDOWN] == 1 and counters.injected == 1
    assert [d.action for d in proxy.journal if d.service == "sqs"] == ["CreateQueue", "SendMessage", "ReceiveMessage"]


def test_sqs_and_eventbridge_get_their_own_error_shapes_when_chosen(proxy):
    proxy.mix = FaultMix(internal=1.0, services=("sqs", "events"))
    via_sqs = boto3.client("sqs", endpoint_url=proxy.url, region_name="us-east-1", config=ONE_ATTEMPT)
    via_events = boto3.client("events", endpoint_url=proxy.url, region_name="us-east-1", config=ONE_ATTEMPT)

    with pytest.raises(ClientError) as sqs_error:
        via_sqs.list_queues()
    with pytest.raises(ClientError) as events_error:
        via_events.list_event_buses()

    assert sqs_error.value.response["Error"]["Code"] == "InternalFailure"
    assert events_error.value.response["Error"]["Code"] == "InternalFailure"
    assert events_error.value.response["ResponseMetadata"]["HTTPStatusCode"] == 500


def test_slowdown_and_internal_error_reach_botocore_as_s3_answers_them(proxy, s3):
    bucket = new_bucket(s3)
    s3.put_object(Bucket=bucket, Key="a.md", Body=b"A")
    proxy.add_rule(Rule(SLOWDOWN, method="GET"))
    proxy.add_rule(Rule(INTERNAL, method="PUT"))
    proxy.add_rule(Rule(SLOWDOWN, method="HEAD"))
    client = s3_via(proxy)

    with pytest.raises(ClientError) as slow:
        client.get_object(Bucket=bucket, Key="a.md")
    with pytest.raises(ClientError) as internal:
        client.put_object(Bucket=bucket, Key="b.md", Body=b"B")
    with pytest.raises(ClientError) as head:
        client.head_object(Bucket=bucket, Key="a.md")

    assert slow.value.response["Error"] == {"Code": "SlowDown", "Message": "Please reduce your request rate."}
    assert slow.value.response["ResponseMetadata"]["HTTPStatusCode"] == 503
    assert slow.value.response["ResponseMetadata"]["HTTPHeaders"]["server"] == "AmazonS3"
    assert internal.value.response["Error"]["Code"] == "InternalError"
    assert internal.value.response["ResponseMetadata"]["HTTPStatusCode"] == 500
    assert head.value.response["ResponseMetadata"]["HTTPStatusCode"] == 503  # a HEAD error has no body
    assert "b.md" not in [o["Key"] for o in s3.list_objects_v2(Bucket=bucket).get("Contents", [])]
    assert proxy.counters.forwarded == 0


def test_a_client_that_sends_its_body_without_waiting_for_100_continue_still_reads_the_refusal(proxy, s3):
    bucket = new_bucket(s3)
    proxy.add_rule(Rule(SLOWDOWN, method="PUT"))
    statuses = []
    for _ in range(5):
        connection = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=5)
        connection.request("PUT", f"/{bucket}/big.bin", body=b"x" * 1_000_000, headers={"Expect": "100-continue"})
        statuses.append(connection.getresponse().status)
        connection.close()

    assert statuses == [503] * 5


def test_botocore_retries_an_injected_slowdown_and_the_call_succeeds(proxy, s3):
    bucket = new_bucket(s3)
    s3.put_object(Bucket=bucket, Key="a.md", Body=b"frete gratis")
    proxy.add_rule(Rule(SLOWDOWN, method="GET", nth=1))
    client = s3_via(proxy, Config(retries={"mode": "standard", "total_max_attempts": 3}))

    assert client.get_object(Bucket=bucket, Key="a.md")["Body"].read() == b"frete gratis"
    assert [d.fault for d in proxy.journal] == [SLOWDOWN, None]


def test_a_reset_before_forwarding_never_reaches_s3(proxy, s3):
    bucket = new_bucket(s3)
    proxy.add_rule(Rule(RESET_BEFORE, method="PUT", path=r"/sightings/"))

    assert outcome(lambda: s3_via(proxy).put_object(Bucket=bucket, Key="sightings/s1.json", Body=b"{}")) == "closed"
    assert outcome(lambda: s3.head_object(Bucket=bucket, Key="sightings/s1.json")) == "404"
    assert proxy.counters.forwarded == 0 and proxy.counters.faults[RESET_BEFORE] == 1


def test_a_reset_after_forwarding_applied_the_write_the_client_never_heard_of(proxy, s3):
    bucket = new_bucket(s3)
    proxy.add_rule(Rule(RESET_AFTER, method="PUT"))

    put = outcome(lambda: s3_via(proxy).put_object(Bucket=bucket, Key="sightings/s1.json", Body=b'{"n": 1}'))

    assert put == "closed"
    assert s3.get_object(Bucket=bucket, Key="sightings/s1.json")["Body"].read() == b'{"n": 1}'
    assert proxy.counters.forwarded == 1 and proxy.counters.faults[RESET_AFTER] == 1


def test_a_reset_is_a_tcp_reset_not_a_polite_close(proxy, s3):
    bucket = new_bucket(s3)
    proxy.add_rule(Rule(RESET_AFTER, method="GET"))
    with socket.create_connection(("127.0.0.1", proxy.port), timeout=5) as raw:
        raw.sendall(f"GET /{bucket}/x HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
        with pytest.raises(ConnectionResetError):
            raw.recv(100)


def test_a_conditional_put_gets_409_conflict_and_is_not_applied(proxy, s3):
    bucket = new_bucket(s3)
    proxy.mix = FaultMix(conflict_on_conditional=1.0)
    client = s3_via(proxy)

    with pytest.raises(ClientError) as conflict:
        client.put_object(Bucket=bucket, Key="c.md", Body=b"novo", IfNoneMatch="*")
    plain = outcome(lambda: client.put_object(Bucket=bucket, Key="d.md", Body=b"sem condicao"))

    assert conflict.value.response["Error"]["Code"] == "ConditionalRequestConflict"
    assert conflict.value.response["ResponseMetadata"]["HTTPStatusCode"] == 409
    assert plain == "ok"
    assert outcome(lambda: s3.head_object(Bucket=bucket, Key="c.md")) == "404"
    assert proxy.counters.faults[CONFLICT] == 1


def test_a_rule_fires_exactly_on_the_nth_matching_request(proxy, s3):
    bucket = new_bucket(s3)
    proxy.add_rule(Rule(RESET_AFTER, method="PUT", path=r"^/[^/]+/sightings/", header=CONDITIONAL, nth=2))
    client = s3_via(proxy)

    results = [
        outcome(lambda: client.put_object(Bucket=bucket, Key="sightings/plain", Body=b"1")),
        outcome(lambda: client.put_object(Bucket=bucket, Key="concepts/a.md", Body=b"2", IfNoneMatch="*")),
        outcome(lambda: client.put_object(Bucket=bucket, Key="sightings/s1", Body=b"3", IfNoneMatch="*")),
        outcome(lambda: client.get_object(Bucket=bucket, Key="sightings/s1")),
        outcome(lambda: client.put_object(Bucket=bucket, Key="sightings/s2", Body=b"4", IfNoneMatch="*")),
        outcome(lambda: client.put_object(Bucket=bucket, Key="sightings/s3", Body=b"5", IfNoneMatch="*")),
    ]

    assert results == ["ok", "ok", "ok", "ok", "closed", "ok"]
    assert [d.rule for d in proxy.journal] == [None, None, None, None, 0, None]
    assert s3.get_object(Bucket=bucket, Key="sightings/s2")["Body"].read() == b"4"


def test_a_rule_without_nth_fires_on_every_match_and_the_first_firing_rule_wins(proxy, s3):
    bucket = new_bucket(s3)
    proxy.add_rule(Rule(INTERNAL, method="GET", nth=(2, 3)))
    proxy.add_rule(Rule(SLOWDOWN, method="GET"))
    client = s3_via(proxy)

    results = [outcome(lambda: client.get_object(Bucket=bucket, Key="x")) for _ in range(4)]

    assert results == ["SlowDown", "InternalError", "InternalError", "SlowDown"]


def test_quiet_lets_a_test_set_up_data_without_faults_or_rule_counting(proxy, s3):
    bucket = new_bucket(s3)
    proxy.mix = FaultMix(slowdown=1.0)
    proxy.add_rule(Rule(RESET_BEFORE, method="PUT", nth=1))
    client = s3_via(proxy)

    with proxy.quiet():
        setup = [outcome(lambda: client.put_object(Bucket=bucket, Key=f"k{i}", Body=b"x")) for i in range(3)]
    after = [outcome(lambda: client.put_object(Bucket=bucket, Key="k9", Body=b"x")) for _ in range(2)]

    assert setup == ["ok"] * 3
    assert after == ["closed", "SlowDown"]
    assert proxy.counters.seen == 5 and proxy.counters.forwarded == 3


def fault_run(moto_endpoint: str, s3, seed: int) -> list[str]:
    """A fixed request sequence through a mix of every fault; what each request saw."""
    bucket = new_bucket(s3)
    mix = FaultMix(slowdown=0.15, internal=0.1, reset=0.15, conflict_on_conditional=0.3)
    with FaultProxy(moto_endpoint, mix=mix, seed=seed) as proxy:
        client = s3_via(proxy)
        seen = []
        for i in range(40):
            key = f"sightings/{i % 5}"
            if i % 3 == 0:
                seen.append(outcome(lambda: client.put_object(Bucket=bucket, Key=key, Body=b"x", IfNoneMatch="*")))
            elif i % 3 == 1:
                seen.append(outcome(lambda: client.put_object(Bucket=bucket, Key=key, Body=b"y")))
            else:
                seen.append(outcome(lambda: client.get_object(Bucket=bucket, Key=key)))
        return seen + [d.fault or "-" for d in proxy.journal]


def test_the_same_seed_gives_the_same_faults_for_the_same_requests(moto_endpoint, s3):
    first, again, other = (fault_run(moto_endpoint, s3, seed) for seed in (7, 7, 8))

    assert first == again
    assert first != other
    assert {SLOWDOWN, INTERNAL, RESET_BEFORE, RESET_AFTER, CONFLICT} <= set(first[40:])


def test_a_delay_answers_late_but_correctly(proxy, s3):
    bucket = new_bucket(s3)
    s3.put_object(Bucket=bucket, Key="a.md", Body=b"A")
    proxy.add_rule(Rule(method="GET", delay=0.3))

    started = time.monotonic()
    body = s3_via(proxy).get_object(Bucket=bucket, Key="a.md")["Body"].read()

    assert body == b"A" and time.monotonic() - started >= 0.3
    assert proxy.counters.delayed == 1 and proxy.counters.injected == 0


def test_parallel_readers_through_a_faulty_proxy_all_get_their_objects_by_retrying(proxy, s3):
    bucket = new_bucket(s3)
    for i in range(32):
        s3.put_object(Bucket=bucket, Key=f"concepts/{i}.md", Body=f"concept {i}".encode())
    proxy.mix = FaultMix(slowdown=0.1, internal=0.05, reset=0.1)
    client = s3_via(proxy, Config(retries={"total_max_attempts": 1}, max_pool_connections=32))

    def read(i: int) -> bytes:
        for _ in range(30):  # retried at once: botocore's own backoff would make this test slow
            try:
                return client.get_object(Bucket=bucket, Key=f"concepts/{i}.md")["Body"].read()
            except (ClientError, ConnectionClosedError):
                pass
        raise AssertionError("30 faults in a row")

    with ThreadPoolExecutor(32) as pool:
        bodies = list(pool.map(read, list(range(32)) * 3))

    assert bodies == [f"concept {i}".encode() for i in range(32)] * 3
    counters = proxy.counters
    not_forwarded = counters.faults[SLOWDOWN] + counters.faults[INTERNAL] + counters.faults[RESET_BEFORE]
    assert counters.seen == counters.forwarded + not_forwarded == 96 + counters.injected
    assert counters.injected > 0


def test_stopping_closes_kept_alive_connections_and_leaves_no_thread(moto_endpoint, s3):
    bucket = new_bucket(s3)
    before = {t for t in threading.enumerate()}
    proxy = FaultProxy(moto_endpoint).start()
    client = s3_via(proxy)
    client.list_objects_v2(Bucket=bucket)  # leaves a kept-alive connection in boto3's pool
    proxy.stop()

    deadline = time.monotonic() + 3
    while set(threading.enumerate()) - before and time.monotonic() < deadline:
        time.sleep(0.02)  # moto's own handler thread ends when it sees the upstream connection close
    assert set(threading.enumerate()) - before == set()
    with pytest.raises(EndpointConnectionError):
        client.list_objects_v2(Bucket=bucket)


@pytest.mark.parametrize("make", [
    lambda: FaultMix(slowdown=1.5),
    lambda: FaultMix(slowdown=0.6, internal=0.6),
    lambda: FaultMix(services=()),
    lambda: FaultMix(delay_seconds=-1),
    lambda: Rule("explode"),
    lambda: Rule(),
    lambda: Rule(SLOWDOWN, path="("),
    lambda: Rule(SLOWDOWN, nth=0),
    lambda: Rule(SLOWDOWN, method="GET /"),
    lambda: Rule(SLOWDOWN, header=()),
    lambda: FaultProxy("https://127.0.0.1:1"),
])
def test_a_plan_that_cannot_describe_faults_is_refused_with_a_typed_error(make):
    with pytest.raises(InvalidFaultSpec) as refused:
        make()
    assert refused.value.code == "invalid_fault_spec"
