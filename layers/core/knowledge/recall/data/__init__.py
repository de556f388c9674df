"""Word-frequency tables recall reads (knowledge.recall.signals; docs/third-party.md)."""
