"""ExportFunction: export an agent's concepts to an S3 prefix in SESSIONS_BUCKET."""

from aws_lambda_powertools import Logger

from knowledge import wiring
from shared.errors import KnowledgeError

logger = Logger()
exporter = wiring.exporter_from_env()


@logger.inject_lambda_context
def lambda_handler(event, context):
    try:
        request, prefix, result = exporter.run(event)
    except KnowledgeError as exc:
        logger.warning("export refused", extra={"error_code": exc.code})
        return {"ok": False, "error": {"code": exc.code, "message": str(exc)}}
    logger.info("export written", extra={"tenant": request.tenant, "agent": request.scope,
                                         "format": request.format, "concepts": result.concepts})
    return {"ok": True, "bucket": exporter.bucket, "prefix": prefix, **result.as_dict()}
