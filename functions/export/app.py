"""ExportFunction: export an agent's concepts to an S3 prefix in SESSIONS_BUCKET."""

from aws_lambda_powertools import Logger

from knowledge.curation.export import S3Sink, export_agent, parse_export_request
from knowledge.store.concepts import ConceptStore
from shared.aws import client
from shared.errors import KnowledgeError
from shared.settings import Settings

logger = Logger()
settings = Settings.from_env(require=("SESSIONS_BUCKET",))
s3 = client("s3")
store = ConceptStore(s3, settings.knowledge_bucket)


@logger.inject_lambda_context
def lambda_handler(event, context):
    try:
        request = parse_export_request(event)
        prefix = request.prefix()
        result = export_agent(store, request.tenant, request.agent,
                              S3Sink(s3, settings.sessions_bucket, prefix), fmt=request.format)
    except KnowledgeError as exc:
        logger.warning("export refused", extra={"error_code": exc.code})
        return {"ok": False, "error": {"code": exc.code, "message": str(exc)}}
    logger.info("export written", extra={"tenant": request.tenant, "agent": request.agent,
                                         "format": request.format, "concepts": result.concepts})
    return {"ok": True, "bucket": settings.sessions_bucket, "prefix": prefix, **result.as_dict()}
