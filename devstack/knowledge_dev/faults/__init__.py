"""A fault-injecting reverse proxy in front of moto's server: the bad days of S3, on demand.

moto never throttles, never answers 409 and never drops a connection; real S3 does all three.
Point boto3 at `FaultProxy(...).url` instead of moto's endpoint and every request is forwarded
byte-for-byte, except the ones a seeded `FaultMix` or a deterministic `Rule` picks: those get
503 SlowDown, 500 InternalError, 409 ConditionalRequestConflict (S3's own XML bodies and
headers), a connection reset before forwarding (S3 never saw it) or after it (S3 applied it,
the client never hears so), and optionally a delay before the answer.

    with FaultProxy(moto_endpoint, mix=FaultMix(slowdown=0.1, reset=0.05), seed=7) as proxy:
        with proxy.quiet():
            set_up_data(boto3.client("s3", endpoint_url=proxy.url))
        run_the_code_under_test(proxy.url)
        print(proxy.counters)

The plan (faults, FaultMix, Rule and what is recorded of a request) is knowledge_dev.faults.plan, the
HTTP on the wire knowledge_dev.faults.wire, FaultProxy and its server knowledge_dev.faults.proxy.
"""

from .plan import (
    CONDITIONAL,
    CONFLICT,
    FAULTS,
    INTERNAL,
    RESET_AFTER,
    RESET_BEFORE,
    SLOWDOWN,
    Counters,
    Decision,
    FaultMix,
    InvalidFaultSpec,
    Request,
    Rule,
)
from .proxy import FaultProxy

__all__ = ["CONDITIONAL", "CONFLICT", "FAULTS", "INTERNAL", "RESET_AFTER", "RESET_BEFORE", "SLOWDOWN", "Counters",
           "Decision", "FaultMix", "FaultProxy", "InvalidFaultSpec", "Request", "Rule"]
