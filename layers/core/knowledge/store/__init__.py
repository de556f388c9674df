"""The store: concepts in S3 (every write conditional, the change journal), the turn archive, the
queues and ledgers of the write path, and the engine's session exports."""
