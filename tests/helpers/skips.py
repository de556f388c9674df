"""Skipping a module whose parts this machine lacks, except under CI."""

from __future__ import annotations

import os

import pytest


def skip_unless_present(needed: dict[str, bool]):
    """A module's skip mark for parts this machine may lack (a browser, the built page); under
    CI (.ci/run sets CI) a missing part is an error instead, so nothing is skipped there."""
    missing = [what for what, present in needed.items() if not present]
    if missing and os.environ.get("CI"):
        raise RuntimeError(f"these tests need {' and '.join(missing)}")
    return pytest.mark.skipif(bool(missing), reason=f"needs {' and '.join(missing)}")
