"""Build steps: each writes a file the repository ships (schemas, OpenAPI documents, word-frequency tables)."""
