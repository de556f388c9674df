"""Stand-ins a test drives by hand: the scripted model's replies, a clock, the Events port."""

from __future__ import annotations


class Script:
    """What the scripted model answers: a list of replies consumed in order, then `default`."""

    def __init__(self):
        self.replies: list = []
        self.default = "[]"

    def __call__(self, request):
        return self.replies.pop(0) if self.replies else self.default


class Clock:
    """A clock the test moves by hand (a warm index's refresh window, a deadline)."""

    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


class Events:
    """The Events port, keeping what was published."""

    def __init__(self):
        self.published = []

    def publish(self, detail_type, detail):
        self.published.append((detail_type, detail))
