"""RepairFunction: an agent's (or the tenant's shared) concepts written before "nothing without a judgment",
their engine-written unjudged entries moved out into the waiting pairs (knowledge.operation.repair)."""

from aws_lambda_powertools import Logger

from knowledge import wiring
from shared.errors import KnowledgeError

logger = Logger()
repairer = wiring.repairer_from_env()


@logger.inject_lambda_context
def lambda_handler(event, context):
    try:
        repair = repairer.run(event)
    except KnowledgeError as exc:
        logger.warning("repair refused", extra={"error_code": exc.code})
        return {"ok": False, "error": {"code": exc.code, "message": str(exc)}}
    report = repair.as_dict()
    logger.info("repair done", extra={k: report[k] for k in ("scope", "dry_run", "checked", "concepts", "entries")})
    return {"ok": True, **report}
