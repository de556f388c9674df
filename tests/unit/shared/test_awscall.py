"""The one S3 retry loop: what it retries, what it answers at once, and that it stops at the deadline."""

from __future__ import annotations

import time

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError, ReadTimeoutError

from shared import awscall, deadline
from shared.errors import Conflict, DeadlineExceeded, NotFound, StoreUnavailable


def client_error(code: str, status: int) -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": "x"}, "ResponseMetadata": {"HTTPStatusCode": status}},
                       "PutObject")


class Flaky:
    """An S3 client whose put_object fails with `failures` in order, then succeeds."""

    def __init__(self, *failures: Exception):
        self.failures, self.calls = list(failures), 0

    def put_object(self, **kwargs):
        self.calls += 1
        if self.failures:
            raise self.failures.pop(0)
        return {"ETag": '"e"'}


@pytest.mark.parametrize("fault", [
    client_error("SlowDown", 503), client_error("InternalError", 500),
    client_error("ConditionalRequestConflict", 409),
    EndpointConnectionError(endpoint_url="http://127.0.0.1:1"),
    ReadTimeoutError(endpoint_url="http://127.0.0.1:1"),
])
def test_transient_faults_are_retried_until_the_call_succeeds(fault):
    s3 = Flaky(fault, fault)
    assert awscall.call(s3, "put_object", sleep=lambda s: None, Bucket="b", Key="k") == {"ETag": '"e"'}
    assert s3.calls == 3


def test_a_409_on_a_create_only_put_is_never_taken_as_already_there():
    s3 = Flaky(client_error("ConditionalRequestConflict", 409))
    assert awscall.succeeds(Conflict, s3, "put_object", Bucket="b", Key="k", IfNoneMatch="*") is True
    assert s3.calls == 2


def test_a_412_is_an_answer_not_a_fault():
    s3 = Flaky(client_error("PreconditionFailed", 412))
    assert awscall.succeeds(Conflict, s3, "put_object", Bucket="b", Key="k", IfNoneMatch="*") is False
    assert s3.calls == 1


def test_a_missing_key_is_not_retried():
    s3 = Flaky(client_error("NoSuchKey", 404))
    with pytest.raises(NotFound):
        awscall.call(s3, "put_object", Bucket="b", Key="k")
    assert s3.calls == 1


def test_without_a_deadline_the_attempts_are_bounded():
    s3 = Flaky(*[client_error("SlowDown", 503)] * 50)
    with pytest.raises(StoreUnavailable):
        awscall.call(s3, "put_object", sleep=lambda s: None, Bucket="b", Key="k")
    assert s3.calls == awscall.MAX_ATTEMPTS


def test_retries_stop_before_the_deadline_passes():
    s3 = Flaky(*[client_error("SlowDown", 503)] * 10_000)
    started = time.monotonic()
    with deadline.until(started + 0.5), pytest.raises(StoreUnavailable):
        awscall.call(s3, "put_object", Bucket="b", Key="k")
    assert time.monotonic() - started < 1.0  # a loaded machine's margin past the 0.5 s deadline
    assert s3.calls > 1


def test_no_call_starts_once_the_deadline_has_passed():
    s3 = Flaky()
    with deadline.until(time.monotonic() - 1), pytest.raises(DeadlineExceeded):
        awscall.call(s3, "put_object", Bucket="b", Key="k")
    assert s3.calls == 0


def test_worker_threads_carry_the_callers_deadline():
    from concurrent.futures import ThreadPoolExecutor

    with deadline.until(time.monotonic() + 30), ThreadPoolExecutor(2) as pool:
        seen = list(pool.map(deadline.carry(lambda _: deadline.current()), range(4)))
        assert seen == [deadline.current()] * 4
        assert pool.submit(deadline.current).result() is None  # a bare thread does not
