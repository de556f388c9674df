"""Where the repository keeps what the tests read."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EVENTS = ROOT / "events"
DEMO = ROOT / "devstack" / "knowledge_dev" / "demo"
ARTIFACTS = ROOT / "test-artifacts"  # the browser tests' screenshots
