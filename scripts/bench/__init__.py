"""Benchmarks: each times a path of the engine and says, in its own output, that what it timed did the work."""
