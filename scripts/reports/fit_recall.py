#!/usr/bin/env python3
"""A quick look at recall on the labelled stores' tuning part, in process: each store's concepts
indexed as RetrieveFunction indexes them (knowledge.recall.index.Index, the agent's default
`top_k` and `min_score`, no vocabulary), each test message answered by `Index.relevant`, as
retrieve answers it. Seconds instead of scripts/reports/stores.py's minutes, so that the floor's
and the signals' weights can be chosen on the tuning part only; the figures that count are the
report's, through the real handlers.

    ./run script reports.fit_recall [--learned REPORT.json] [--store NAME ...] [--misses PHASE] [--fit]
        [--unaided] [--loso] [--json] [--smoke]

The phases: day one; day one + model words (the stand-in's phrases, tests/data/stores/proposals/,
through the engine's own gate, knowledge.learning.model_words.gate_words); and, given a stores
report's `--json` output (`--learned`), after traffic, with and without the model words: the
words that run's traffic taught each concept (its `learning` section), as learned words. It ends
with the on-topic messages day one's index answered with their concept. --smoke: two stores (the
fewest --loso can leave one out of).

--unaided: what the model's words add at the same precision. Day one without model words, judged as
if the model had taught the agent (the engine judges only an agent holding a model word), at the
smallest threshold of a 0.05 grid from signals.THRESHOLD down whose pooled off-topic injecting is
still no more than day one + model words'; per store, hit@5 both ways and the difference.

--loso: what the judgment does on a store it was not fitted on. Each store in turn is left out: the
weights are fitted (as --fit) on the others, and its day one + model words answered at each threshold
of a 0.01 grid from 0.70 to 0.85; the left-out answers pooled per threshold, with the worst store's
off-topic rate. signals.THRESHOLD is the smallest threshold whose pooled off-topic injecting is at most
5 % and wordshare at most 10 % there (docs/retrieval.md, "The operating point").
"""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import numpy as np

from knowledge.format.learned_words import LearnedWord
from knowledge.learning.model_words import gate_words
from knowledge.recall import index as recall_index
from knowledge.recall import signals
from knowledge.recall.index import Index
from scripts.lib.harness import did_work, emit, parser
from scripts.lib.labelled_stores import TOP_K, concepts_of
from scripts.reports.stores import ON_TOPIC, PROPOSALS, load_store, store_paths

MIN_SCORE = 1.0  # the agent's default (knowledge.format.config.DEFAULT_MIN_SCORE)
TODAY = date.today()


class JudgedIndex(Index):
    """An index that judges as if the model had taught its agent (--unaided)."""

    def _known(self, term: str) -> bool:
        return term == signals.TAUGHT or super()._known(term)


def indexed(concepts, judged_always: bool = False) -> Index:
    index = JudgedIndex() if judged_always else Index()
    for concept in concepts:
        index.upsert(concept.name, concept.name, concept, b"")
    index.settle()
    return index


def with_words(concepts, model: dict[str, list[str]] | None, traffic: dict[str, list[str]] | None):
    out = []
    for concept in concepts:
        if model and model.get(concept.name):
            kept, _ = gate_words(model[concept.name], concept)
            concept = concept.replace(learned_words=(*concept.learned_words,
                                                     *(LearnedWord(w, "model", 0, TODAY) for w in kept)))
        if traffic and traffic.get(concept.name):
            had = {e.word for e in concept.learned_words}
            concept = concept.replace(learned_words=(*concept.learned_words, *(
                LearnedWord(w, "loaded", 3, TODAY) for w in traffic[concept.name] if w not in had))[:24])
        out.append(concept)
    return out


def answer(index: Index, tests: list[dict], store: str) -> list[dict]:
    rows = []
    for test in tests:
        hits = index.relevant(test["message"], TOP_K, MIN_SCORE)
        rows.append({**test, "store": store, "ranked": [h.name for h in hits]})
    return rows


def figures(rows: list[dict]) -> dict:
    on = [r for r in rows if r["slice"] in ON_TOPIC]
    out = {"hit@5": sum(any(e in r["ranked"] for e in r["expected"]) for r in on) / max(1, len(on)),
           "silent": sum(not r["ranked"] for r in on) / max(1, len(on))}
    for slice_ in ("off-topic", "wordshare"):
        off = [r for r in rows if r["slice"] == slice_]
        out[slice_] = sum(bool(r["ranked"]) for r in off) / max(1, len(off))
    return out


def judged_rows(index: Index, tests: list[dict]) -> tuple[list[np.ndarray], list[int]]:
    """Per test, the judgment's FEATURES of the best scored concept the floor lets through to it
    (as Index.relevant computes them), labelled 1 when the test is on topic and that concept is one it
    expects, 0 when the test is off topic (an on-topic test whose best concept is another is left out:
    it says nothing of whether the message is about the store)."""
    rows, labels = [], []
    for test in tests:
        matched = index.match(test["message"])
        if matched is None:
            continue
        scores, shared, told, term_slots, grounded, terms, said = (
            matched.scores, matched.shared, matched.told, matched.term_slots, matched.grounded, matched.terms,
            matched.said)
        if len(terms) < 2:
            continue  # a message of one word is left to the floor
        ok = (scores > 0) & (scores >= index.gate(MIN_SCORE)) & (
            shared >= min(recall_index.MIN_SHARED, recall_index.SINGLE))
        if grounded is not None:
            ok &= grounded
        candidates = np.flatnonzero(ok)
        if not len(candidates):
            continue
        top = int(np.argmax(scores[candidates]))
        on_topic = test["slice"] in ON_TOPIC
        if on_topic and index.doc_at(int(candidates[top])).name not in test["expected"]:
            continue
        shared_terms = np.bincount(np.concatenate(term_slots), minlength=len(scores))
        cue = matched.asks
        in_english = signals.english(test["message"])
        foreign = [signals.is_foreign(in_english, index.doc_at(int(slot)).description) for slot in candidates]
        rows.append(signals.features(scores[candidates] / index.gate(1.0), shared[candidates], shared_terms[candidates],
                                     told, said, cue, "?" in test["message"], np.array(foreign))[top])
        labels.append(int(on_topic))
    return rows, labels


def fit_rows(names: list[str], learned: dict | None = None) -> tuple[list[np.ndarray], list[int]]:
    """The rows `fit` reads (judged_rows) of every phase of these stores, read with the judgment off: the
    floor's candidates, as the judgment meets them."""
    judge, signals.JUDGE = signals.JUDGE, False
    try:
        collected: list = []
        run(names, learned, collected)
    finally:
        signals.JUDGE = judge
    return [row for part, _ in collected for row in part], [label for _, part in collected for label in part]


def fit(rows: list[np.ndarray], labels: list[int], l2: float = 0.001, steps: int = 3000) -> tuple[np.ndarray, float]:
    """Logistic regression by gradient descent on standardised features; the weights and bias of the
    raw features (what signals.WEIGHTS and BIAS hold)."""
    x, y = np.array(rows), np.array(labels, dtype=float)
    mean, scale = x.mean(0), x.std(0) + 1e-9
    z = np.hstack([(x - mean) / scale, np.ones((len(x), 1))])
    w = np.zeros(z.shape[1])
    for _ in range(steps):
        p = 1 / (1 + np.exp(-z @ w))
        w -= 0.5 * (z.T @ (p - y) / len(y) + l2 * np.r_[w[:-1], 0.0])
    weights = w[:-1] / scale
    return weights, float(w[-1] - (w[:-1] * mean / scale).sum())


def run(names: list[str], learned: dict | None, collect: list | None = None,
        unaided: bool = False) -> dict[str, list[dict]]:
    phases: dict[str, list[dict]] = {}
    for name in names:
        store = load_store(store_paths()[name])
        concepts = concepts_of(store)
        proposals = json.loads((PROPOSALS / f"{name}.json").read_text(encoding="utf-8"))
        plan = {"day one": (None, None), "day one + model words": (proposals, None)}
        if unaided:
            plan = {"day one, judged": (None, None)}
        elif learned:
            plan["after traffic"] = (None, learned["after traffic (both)"][name]["learned"])
            plan["after traffic + model words"] = (proposals, learned["after traffic (both) + model words"][name]["learned"])
        for phase, (model, traffic) in plan.items():
            index = indexed(with_words(concepts, model, traffic), judged_always=unaided)
            if collect is not None:
                collect.append(judged_rows(index, store["tests"]))
            phases.setdefault(phase, []).extend(answer(index, store["tests"], name))
    return phases


def main() -> None:
    parser_ = parser(__doc__)
    parser_.add_argument("--learned", type=Path, help="a stores report's --json output (its traffic's learned words)")
    parser_.add_argument("--store", action="append")
    parser_.add_argument("--misses", metavar="PHASE", help="print the misses and off-topic injections of a phase")
    parser_.add_argument("--fit", action="store_true", help="fit the judgment's weights (without it) and print them")
    parser_.add_argument("--unaided", action="store_true",
                         help="day one without model words judged at the same precision, against with them")
    parser_.add_argument("--loso", action="store_true", help="each store judged by weights fitted on the others")
    args = parser_.parse_args()
    learned = json.loads(args.learned.read_text())["learning"] if args.learned else None
    names = ["academia", "materiais"] if args.smoke else args.store or sorted(store_paths())
    if args.loso and len(names) < 2:
        parser_.error("--loso leaves one store out of two or more")
    if args.fit:
        rows, labels = fit_rows(names, learned)
        weights, bias = fit(rows, labels)
        print(f"{len(labels)} rows ({sum(labels)} on topic): WEIGHTS = {np.round(weights, 4).tolist()}, "
              f"BIAS = {bias:.4f}")
        signals.WEIGHTS, signals.BIAS = weights, bias
    phases = run(names, learned)
    result: dict = {phase: figures(rows) for phase, rows in phases.items()}
    if args.unaided:
        result["unaided"] = unaided(names, phases["day one + model words"])
    if args.loso:
        result["left out"] = left_out(names)

    def printed() -> None:
        print_phases(phases, result.get("unaided"))
        print_left_out(result.get("left out"))

    emit(result, args.json, printed)
    if args.misses:
        for r in phases[args.misses]:
            miss = r["slice"] in ON_TOPIC and not any(e in r["ranked"] for e in r["expected"])
            if miss or (r["slice"] not in ON_TOPIC and r["ranked"]):
                print(f"{r['store']:11} {r['slice']:12} {r['message'][:90]!r} -> {r['ranked'][:2]} want {r['expected']}")
    day_one = [r for r in next(iter(phases.values())) if r["slice"] in ON_TOPIC]
    did_work("on-topic messages answered with their concept on day one",
             sum(any(e in r["ranked"] for e in r["expected"]) for r in day_one), len(day_one), as_json=args.json)


def unaided(names: list[str], taught: list[dict]) -> dict:
    """--unaided (see the module's doc): the model's words' gain at the same precision, per store."""
    threshold, ceiling = signals.THRESHOLD, figures(taught)["off-topic"]
    rows, at = [], None
    try:
        for step in range(int(round(threshold * 20)), 0, -1):
            signals.THRESHOLD = min(threshold, step / 20)
            judged = run(names, None, unaided=True)["day one, judged"]
            if figures(judged)["off-topic"] > ceiling:
                break
            rows, at = judged, signals.THRESHOLD
    finally:
        signals.THRESHOLD = threshold
    per_store = {name: {"unaided": figures([r for r in rows if r["store"] == name]),
                        "model words": figures([r for r in taught if r["store"] == name])} for name in names}
    per_store["all"] = {"unaided": figures(rows), "model words": figures(taught)}
    return {"threshold": at, "stores": per_store}


LOSO_GRID = tuple(round(0.70 + step / 100, 2) for step in range(16))


def left_out(names: list[str]) -> dict:
    """--loso (see the module's doc): per threshold, the pooled figures of each store judged by weights
    fitted on the others, and the worst store's off-topic injecting."""
    weights, bias, threshold = signals.WEIGHTS, signals.BIAS, signals.THRESHOLD
    rows = {name: fit_rows([name]) for name in names}
    answered: dict[float, list[dict]] = {t: [] for t in LOSO_GRID}
    try:
        for held in names:
            others = [name for name in names if name != held]
            signals.WEIGHTS, signals.BIAS = fit([row for name in others for row in rows[name][0]],
                                                [label for name in others for label in rows[name][1]])
            store = load_store(store_paths()[held])
            proposals = json.loads((PROPOSALS / f"{held}.json").read_text(encoding="utf-8"))
            index = indexed(with_words(concepts_of(store), proposals, None))  # the judgment is read per answer
            for signals.THRESHOLD in LOSO_GRID:
                answered[signals.THRESHOLD] += answer(index, store["tests"], held)
    finally:
        signals.WEIGHTS, signals.BIAS, signals.THRESHOLD = weights, bias, threshold
    return {f"{t:.2f}": {**figures(got), "worst off-topic": max(figures([r for r in got if r["store"] == name])["off-topic"]
                                                            for name in names)} for t, got in answered.items()}


def print_left_out(figures_by_threshold: dict | None) -> None:
    if not figures_by_threshold:
        return
    print("\nday one + model words, each store judged by weights fitted on the others (pooled):")
    print(f"{'threshold':>9} {'hit@5':>6} {'silent':>7} {'off':>6} {'wshare':>7} {'worst off':>10}")
    for t, f in figures_by_threshold.items():
        mark = " <- signals.THRESHOLD" if float(t) == signals.THRESHOLD else ""
        print(f"{t:>9} {f['hit@5']:6.3f} {f['silent']:7.1%} {f['off-topic']:6.1%} {f['wordshare']:7.1%} "
              f"{f['worst off-topic']:10.1%}{mark}")


def print_phases(phases: dict, unaided_figures: dict | None = None) -> None:
    print(f"{'phase':32} {'hit@5':>6} {'silent':>7} {'off':>6} {'wshare':>7}")
    for phase, rows in phases.items():
        f = figures(rows)
        print(f"{phase:32} {f['hit@5']:6.3f} {f['silent']:7.1%} {f['off-topic']:6.1%} {f['wordshare']:7.1%}")
    if unaided_figures:
        print(f"\nday one judged without model words at threshold {unaided_figures['threshold']} "
              "(off-topic no more than with them), hit@5 / silent / off-topic:")
        print(f"{'store':12} {'unaided':>24} {'model words':>24} {'gain':>6}")
        for name, both in unaided_figures["stores"].items():
            u, m = both["unaided"], both["model words"]
            print(f"{name:12} {u['hit@5']:8.3f} {u['silent']:6.1%} {u['off-topic']:6.1%}   "
                  f"{m['hit@5']:8.3f} {m['silent']:6.1%} {m['off-topic']:6.1%}   {m['hit@5'] - u['hit@5']:+.3f}")


if __name__ == "__main__":
    main()
