"""PurgeFunction: the LGPD purges, invoked directly (an operator's tooling; never the turn path).

{"action": "forget_customer", "tenant", "customer_id"[, "dry_run"]}
{"action": "delete_tenant_data", "tenant", "confirm" (the tenant again)[, "dry_run"]}
-> {"action", "tenant", "complete", "dry_run", "removed": {kind: n}, "total"}; "complete": false when
the deadline came first: invoke it again with the same payload to finish. A refusal answers
{"error": {"code", "message"}}. Logs, metrics and answers carry counts, never an id or a value.
"""

from aws_lambda_powertools import Logger

from facts import wiring as facts_wiring
from knowledge import wiring
from shared import deadline
from shared.errors import InvalidRequest, KnowledgeError

# A batch is one listing and one DeleteObjects of up to 1000 versions: start one only with this left.
STOP_SECONDS = 10.0

logger = Logger()
counters = wiring.counters()
# Each action: its request's parser and the purge itself (a tenant's includes Facts' share of it).
ACTIONS = {"forget_customer": facts_wiring.customer_purge_from_env(parts=(wiring.customer_share_from_env(),)),
           "delete_tenant_data": wiring.tenant_purge_from_env(parts=(facts_wiring.tenant_part(),))}


@logger.inject_lambda_context
def lambda_handler(event, context):
    action = event.get("action") if isinstance(event, dict) else None
    action = action if isinstance(action, str) and action in ACTIONS else None
    try:
        if action is None:
            raise InvalidRequest(f"action: must be one of {', '.join(sorted(ACTIONS))}")
        purge = ACTIONS[action]
        request = purge.parse(event)
        with deadline.until(deadline.at_the_latest(context)):
            report = purge.run(request, lambda: context.get_remaining_time_in_millis() / 1000 > STOP_SECONDS)
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
