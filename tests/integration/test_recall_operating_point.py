"""The judgment's constants (knowledge.recall.signals) are what the labelled stores' tuning part gives
(scripts/reports/fit_recall.py, in process): WEIGHTS and BIAS are the fit's, and THRESHOLD is the
smallest at which stores the fit did not see stay within 5 % off-topic and 10 % wordshare, pooled
(docs/retrieval.md, "The operating point"). A change to what the index reads or the stores say that moves
either fails here: run `./run script reports.fit_recall --fit --loso` and write what it prints into
signals."""

from __future__ import annotations

import numpy as np
import pytest

from knowledge.recall import signals
from scripts.reports import fit_recall
from scripts.reports.stores import store_paths

OFF_TOPIC_MAX, WORDSHARE_MAX = 0.05, 0.10


@pytest.fixture(scope="module")
def names() -> list[str]:
    return sorted(store_paths())


def test_the_judgments_weights_are_the_fit_of_the_tuning_part(names):
    rows, labels = fit_recall.fit_rows(names)
    weights, bias = fit_recall.fit(rows, labels)
    assert len(labels) == 1035 and sum(labels) == 712  # docs/retrieval.md's rows
    assert np.allclose(weights, signals.WEIGHTS, atol=1e-3), np.round(weights, 4).tolist()
    assert bias == pytest.approx(signals.BIAS, abs=1e-3)


def test_the_threshold_is_the_smallest_that_keeps_unseen_stores_within_the_targets(names):
    left_out = fit_recall.left_out(names)
    within = [float(t) for t, f in left_out.items() if f["off-topic"] <= OFF_TOPIC_MAX and f["wordshare"] <= WORDSHARE_MAX]
    assert within and min(within) == signals.THRESHOLD, {t: (round(f["off-topic"], 3), round(f["wordshare"], 3))
                                                           for t, f in left_out.items()}
    assert left_out[f"{signals.THRESHOLD:.2f}"]["off-topic"] <= OFF_TOPIC_MAX
