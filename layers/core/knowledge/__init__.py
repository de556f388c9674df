"""Knowledge: durable, auditable concepts learned from support conversations."""

__version__ = "0.1.0"
