"""What the floor reads beside a word's rarity among the agent's concepts (knowledge.recall.index): how
common the word is in the language (`floor_weight`, from data/frequency-<lang>.txt), and where a
concept's word came from (a model word weighs MODEL_WEIGHT). The weights were fitted with
scripts/reports/fit_recall.py on the labelled stores' tuning part. docs/retrieval.md, "What the floor reads
beside rarity: origin, commonness, the judgment (issue 40)"."""

from __future__ import annotations

import functools
import math
import re
from importlib import resources
from typing import Callable

import numpy as np

from knowledge.recall.terms import LETTERS, is_english
from shared.language import not_english

COMMON_FROM = 4.0
COMMON_TO = 5.5
COMMON_WEIGHT = 0.0
MODEL_WEIGHT = 1.0
LANGUAGES = ("pt", "en")


@functools.lru_cache(maxsize=None)
def _tables() -> dict[str, float]:
    """Form -> Zipf frequency, the larger of the languages', for the forms at COMMON_FROM or more
    (the rest weigh whole): read once per container, when the first model word is indexed."""
    zipf: dict[str, float] = {}
    for lang in LANGUAGES:
        text = resources.files("knowledge.recall.data").joinpath(f"frequency-{lang}.txt").read_text(encoding="utf-8")
        for line in text.splitlines():
            step, _, forms = line.partition(" ")
            value = int(step) / 10
            if value < COMMON_FROM:
                break  # the lines run from the most common down; a rarer word weighs whole
            for form in forms.split():
                if zipf.get(form, 0.0) < value:
                    zipf[form] = value
    return zipf


def zipf_of(form: str) -> float:
    """How common a word (in the index's singular form) is in the language; 0 for one rarer than
    COMMON_FROM or that the tables lack."""
    return _tables().get(form, 0.0)


@functools.lru_cache(maxsize=65536)
def floor_weight(form: str) -> float:
    """What the floor counts of a shared word written as `form` (see the module's doc)."""
    zipf = zipf_of(form)
    if zipf <= COMMON_FROM:
        return 1.0
    if zipf >= COMMON_TO:
        return COMMON_WEIGHT
    return 1.0 - (1.0 - COMMON_WEIGHT) * (zipf - COMMON_FROM) / (COMMON_TO - COMMON_FROM)


def model_weight(form: str) -> float:
    """What a model word written as `form` weighs, of a learned word the traffic taught (0: nothing)."""
    return MODEL_WEIGHT * floor_weight(form)


@functools.lru_cache(maxsize=4096)
def _described_terms(description: str) -> frozenset[str]:
    from knowledge.recall.analysis import analyze

    return frozenset(analyze(description).terms())


_QUESTIONS = re.compile(r"[^.!?\n]*\?")


def asked(query: str, term: str) -> bool:
    """Whether `term` is in a sentence of `query` that ends with a question mark ("e a garantia?",
    not "tudo bem? só queria agradecer pelo atendimento")."""
    from knowledge.recall.analysis import analyze

    return any(term in analyze(sentence).terms() for sentence in _QUESTIONS.findall(query))


def describes(description: str, term: str) -> bool:
    """Whether a concept's description says `term` (a message of that one word asks about it)."""
    return term in _described_terms(description)


# The judgment: whether a message that passes the floor is about the store at all, read from what a
# concept shares with it and what the message says beside (FEATURES, one row per concept the floor
# passed), weighed by a logistic model fitted on the labelled stores' tuning part, day one without and
# with the stand-in's model words (`scripts/reports/fit_recall.py --fit`: 1,035 rows, 712 on topic). It judges
# a message of two words or more in an agent whose recall the model taught (a concept of it holds a
# model word, TAUGHT; a message of one word is the floor's, "telinha?"): a model
# word reaches everyday chat ("carro", "limite") as no store's own text does, and without one the
# floor is the contract it was. A concept passes when the floor and the judgment both let it through
# at THRESHOLD (the judgment in place of the floor was measured too: at the same off-topic rate it
# kept fewer questions). "foreign": the message is English and the concept's description leans to
# another language: the message's words no concept has are the language's, not another topic's.
# JUDGE False: the floor alone (scripts/reports/fit_recall.py fits with it off).
FEATURES = ("log_score", "shared", "cover", "shared_words", "unknown", "unknown_common", "words", "cue",
            "question", "unknown_common_share", "unknown_share", "foreign")
JUDGE = True
WEIGHTS = np.array([-0.0627, 1.155, 0.029, 0.4863, -0.0793, -0.2248, 0.0955, 1.4187, 1.8934, -0.9723, -2.3556, 2.3861])
BIAS = -2.4480
THRESHOLD = 0.78  # fit_recall --loso: the smallest with left-out stores' off-topic <= 5 %, wordshare <= 10 %
TAUGHT = "\x1emodel"  # a term every concept holding a model word has (weighing nothing): how the index knows


def features(scores: np.ndarray, shared: np.ndarray, shared_words: np.ndarray, told: float,
             said: tuple[int, list], cue: bool, question: bool, foreign: np.ndarray) -> np.ndarray:
    """FEATURES for each concept: its score (as an agent of 40 concepts reads it, as `min_score`) and what it shares (in the floor's units, in words, and
    as a share of what the message tells), with the message's words no concept has (how many, and
    how many the language knows well), its length in words, a cue and a question mark, and whether
    the message is in a language the concept is not (`is_foreign`)."""
    per_concept, per_message = _feature_parts(scores, shared, shared_words, told, said, cue, question)
    n = len(scores)
    return np.column_stack([*per_concept, *(np.full(n, value, dtype=float) for value in per_message),
                            np.asarray(foreign, dtype=float)])


def english(text: str) -> bool:
    """Whether a text is English (knowledge.recall.terms.is_english, on its words)."""
    return is_english(LETTERS.findall(text.lower()))


@functools.lru_cache(maxsize=4096)
def _not_english(description: str) -> bool:
    return not_english(description)


def is_foreign(message_english: bool, description: str) -> bool:
    """Whether an English message (`message_english`) meets a concept whose description leans to another
    language (shared.language.not_english): a description that says nothing either way is not foreign."""
    return message_english and _not_english(description)


def _feature_parts(scores: np.ndarray, shared: np.ndarray, shared_words: np.ndarray, told: float,
                   said: tuple[int, list], cue: bool, question: bool) -> tuple[list[np.ndarray], list[float]]:
    """FEATURES as columns: the four per concept, then the seven the message gives every concept alike."""
    return [np.log1p(scores), shared, shared / max(told, 1e-6), shared_words.astype(float)], \
        _per_message(said, cue, question)


def _per_message(said: tuple[int, list], cue: bool, question: bool) -> list[float]:
    """The seven FEATURES the message gives every concept alike."""
    words, unknown = said
    common = sum(1 for form in unknown if form and zipf_of(form) > 0)
    return [len(unknown), common, words, float(cue), float(question), common / max(1, words),
            len(unknown) / max(1, words)]


def judgment(told: float, said: tuple[int, list], cue: bool, query: str) -> Callable[[float, float, int, str], bool]:
    """The judgment of one message: whether it lets through a concept of that score (as `features`
    reads it), share, shared words and description; the floor's verdict on it stands besides. The logit
    of FEATURES, weighed column by column as plain numbers (the floor passes a handful of concepts: a
    small array costs more than the sums), the message's part once."""
    if not JUDGE:
        return lambda score, share, shared_words, description: True
    weights = WEIGHTS.tolist()  # read per message: a report refits them
    # The message's part as the dot product of its seven (in order, as numpy sums so few; the same bits).
    base = sum(weight * value for weight, value in zip(weights[4:11], _per_message(said, cue, "?" in query))) + BIAS
    w_score, w_shared, w_cover, w_words, w_foreign = *weights[:4], weights[11]
    cover, least, log1p, in_english = max(told, 1e-6), math.log(THRESHOLD / (1 - THRESHOLD)), math.log1p, english(query)

    def passes(score: float, share: float, shared_words: int, description: str) -> bool:
        return base + w_score * log1p(score) + w_shared * share + w_cover * (share / cover) \
            + w_words * float(shared_words) + w_foreign * float(is_foreign(in_english, description)) >= least

    return passes
