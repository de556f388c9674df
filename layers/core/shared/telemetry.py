"""Counters for the gates and outcomes; flushed as CloudWatch EMF metrics by the handlers.

Metric values are counts and dimensions are reasons or kinds: never content.
"""

from __future__ import annotations

import os
import threading
from collections import Counter
from typing import Optional


class Counters:
    def __init__(self) -> None:
        self._counts: Counter = Counter()
        self._lock = threading.Lock()

    def count(self, name: str, value: int = 1, **dimensions: str) -> None:
        if value:
            with self._lock:
                self._counts[(name, tuple(sorted(dimensions.items())))] += value

    def get(self, name: str, **dimensions: str) -> int:
        return self._counts.get((name, tuple(sorted(dimensions.items()))), 0)

    def drain(self) -> Counter:
        with self._lock:
            counts, self._counts = self._counts, Counter()
        return counts

    def flush(self, namespace: Optional[str] = None, service: Optional[str] = None) -> None:
        """Emit each counter as one EMF metric (Powertools), then reset."""
        if os.environ.get("POWERTOOLS_METRICS_DISABLED", "").lower() in ("1", "true"):
            self.drain()
            return
        from aws_lambda_powertools.metrics import MetricUnit, single_metric

        namespace = namespace or os.environ.get("POWERTOOLS_METRICS_NAMESPACE") or "Knowledge"
        for (name, dimensions), value in sorted(self.drain().items()):
            with single_metric(name=name, unit=MetricUnit.Count, value=value, namespace=namespace) as metric:
                if service:
                    metric.add_dimension("service", service)
                for key, dim_value in dimensions:
                    metric.add_dimension(key, dim_value)
