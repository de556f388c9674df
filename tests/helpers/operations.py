"""The template's product alarms as the Metrics Insights queries they are, and the EMF datapoints
the handlers print: which alarms watch a datapoint (tests/integration/test_operations.py and the
Facts page's API drive each failure and look)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Optional

from knowledge_dev.template import load_template

TEMPLATE = load_template()
RESOURCES = TEMPLATE["Resources"]
_QUERY = re.compile(r"SELECT SUM\((?P<metric>\w+)\) FROM SCHEMA\(Knowledge, (?P<dims>\w+(?:, \w+)*)\)"
                    r"(?: WHERE service = '(?P<service>[\w-]+)'(?: AND reason != '(?P<expected>[\w-]+)')?)?")


@dataclass(frozen=True)
class Query:
    """One product alarm's Metrics Insights query: the metric, its exact dimension set, the service."""

    alarm: str
    metric: str
    dimensions: frozenset
    service: Optional[str]
    expected: Optional[str] = None  # a reason that is no failure (a turn deferred by the daily cap)


@dataclass(frozen=True)
class Emitted:
    """One EMF datapoint as Powertools printed it."""

    namespace: str
    metric: str
    dimensions: dict
    value: float


def product_alarms() -> list[Query]:
    queries = []
    for logical_id, resource in RESOURCES.items():
        if resource["Type"] != "AWS::CloudWatch::Alarm" or "Metrics" not in resource["Properties"]:
            continue
        for metric in resource["Properties"]["Metrics"]:
            match = _QUERY.fullmatch(metric["Expression"])
            assert match, f"{logical_id}: not a query this test can read: {metric['Expression']}"
            queries.append(Query(logical_id, match["metric"], frozenset(match["dims"].split(", ")), match["service"],
                                 match["expected"]))
    return queries


def emitted(output: str) -> list[Emitted]:
    points = []
    for line in output.splitlines():
        if not line.startswith('{"_aws"'):
            continue
        record = json.loads(line)
        for directive in record["_aws"]["CloudWatchMetrics"]:
            (dimension_set,) = directive["Dimensions"]
            for metric in directive["Metrics"]:
                points.append(Emitted(directive["Namespace"], metric["Name"],
                                      {key: record[key] for key in dimension_set}, sum(record[metric["Name"]])))
    return points


def alarms_watching(point: Emitted) -> list[str]:
    """The product alarms whose query counts this datapoint."""
    assert point.namespace == "Knowledge"
    return sorted(query.alarm for query in product_alarms()
                  if query.metric == point.metric and query.dimensions == frozenset(point.dimensions)
                  and query.service in (None, point.dimensions.get("service"))
                  and (query.expected is None or point.dimensions.get("reason") != query.expected))


def the(metric: str, output: str) -> Emitted:
    points = [point for point in emitted(output) if point.metric == metric]
    assert len(points) == 1, f"{metric}: {points}"
    return points[0]


def watched(output: str, metric: str) -> set[str]:
    """The alarms watching every datapoint of `metric` (there must be one)."""
    points = [point for point in emitted(output) if point.metric == metric]
    assert points, metric
    return {alarm for point in points for alarm in alarms_watching(point)}
