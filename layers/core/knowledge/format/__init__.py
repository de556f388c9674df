"""The concept format and the messages: a concept document, knowledge.yaml, the turn the engine sends,
the sighting extraction hands consolidation, and the evidence link. Pure: no I/O."""
