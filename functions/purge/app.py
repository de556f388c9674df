"""PurgeFunction: the LGPD purges, invoked directly (an operator's tooling; never the turn path).

{"action": "forget_customer", "tenant", "customer_id"[, "dry_run"]}
{"action": "delete_tenant_data", "tenant", "confirm" (the tenant again)[, "dry_run"]}
-> {"action", "tenant", "complete", "dry_run", "removed": {kind: n}, "total"}; "complete": false when
the deadline came first: invoke it again with the same payload to finish. A refusal answers
{"error": {"code", "message"}}. Logs, metrics and answers carry counts, never an id or a value.
"""

from aws_lambda_powertools import Logger

from facts.purge import TENANT_PART, forget_customer, parse_forget_request
from knowledge.operation.purge import InvalidPurge, delete_tenant_data, parse_tenant_request
from shared import deadline
from shared.aws import client
from shared.errors import KnowledgeError
from shared.settings import Settings
from shared.telemetry import Counters

# A batch is one listing and one DeleteObjects of up to 1000 versions: start one only with this left.
STOP_SECONDS = 10.0

logger = Logger()
settings = Settings.from_env(require=("SESSIONS_BUCKET",))
s3 = client("s3")
counters = Counters()
BUCKETS = dict(knowledge_bucket=settings.knowledge_bucket, sessions_bucket=settings.sessions_bucket)


def forget(request, keep_going):
    return forget_customer(s3, **BUCKETS, tenant=request.tenant, customer_id=request.customer_id,
                           dry_run=request.dry_run, keep_going=keep_going)


def delete_tenant(request, keep_going):
    return delete_tenant_data(s3, **BUCKETS, tenant=request.tenant, confirm=request.confirm, parts=(TENANT_PART,),
                              dry_run=request.dry_run, keep_going=keep_going)


ACTIONS = {"forget_customer": (parse_forget_request, forget),
           "delete_tenant_data": (parse_tenant_request, delete_tenant)}


@logger.inject_lambda_context
def lambda_handler(event, context):
    action = event.get("action") if isinstance(event, dict) else None
    action = action if isinstance(action, str) and action in ACTIONS else None
    try:
        if action is None:
            raise InvalidPurge(f"action: must be one of {', '.join(sorted(ACTIONS))}")
        parse, purge = ACTIONS[action]
        request = parse(event)
        with deadline.until(deadline.at_the_latest(context)):
            report = purge(request, lambda: context.get_remaining_time_in_millis() / 1000 > STOP_SECONDS)
        if not report.dry_run:
            for kind, n in report.removed.items():
                counters.count("ObjectsPurged", n, action=action, kind=kind)
        if not report.complete:
            counters.count("PurgeIncomplete", action=action)
    except KnowledgeError as exc:
        logger.warning("purge refused or failed", extra={"action": action, "error_code": exc.code})
        return {"error": {"code": exc.code, "message": str(exc)}}
    finally:
        counters.flush(service="purge")
    logger.info("purge", extra={"action": action, "tenant": request.tenant, **report.as_dict()})
    return {"action": action, "tenant": request.tenant, **report.as_dict()}
