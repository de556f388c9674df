"""The floor both loops stand on (knowledge and facts): typed errors, names and slugs, the one
S3 retry loop and error translation (awscall), invocation deadlines, AWS clients, the model
clients (Bedrock, OpenAI-compatible), telemetry and strict validation. It knows no concept,
no fact and no use case."""
