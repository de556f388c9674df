"""Lexical search over an agent's concepts: an inverted index with BM25 weights, pure Python.

Text is folded (case, accents), split into words, stripped of stopwords and conversational
filler, brought to the singular and stemmed (Snowball Portuguese, then English, so
troca/trocas/trocar, móvel/móveis and installment/installments meet). Numbers are read
whole: a CEP (13083-970), a CEP range (13000-13999, 13xxx, 13000 a 13999) or a number with
a unit (R$199, 3 a 5 dias, 10x, "em 10 vezes" but not "tentei 2 vezes") becomes an interval
that a message's number matches when it falls inside; a bare number matches only the same whole
number, and a lone digit nothing.
Name and description count more than the body. Each posting keeps its BM25 term weight, so
a query only sums the postings of its own words; the index changes one concept at a time
and re-weights everything only when the average length drifts.

`Index.search` ranks; `Index.relevant` is the floor retrieval applies before injecting.
"""

from __future__ import annotations

import dataclasses
import heapq
import math
import re
import sys
import unicodedata
from array import array
from dataclasses import dataclass
from typing import Iterable, NamedTuple, Optional

import numpy as np
import snowballstemmer

from knowledge.format.concept import Concept, parse
from knowledge.recall.lexicon import SHORTHAND, Reading, lexicon

K1, B = 1.2, 0.75
FIELD_WEIGHTS = (("name", 3), ("description", 2), ("body", 1))
_WORD = re.compile(r"[^\W_]+", re.UNICODE)

STOPWORDS = frozenset("""
a o as os um uma uns umas de da do das dos em na no nas nos num numa por para pra pro com sem e ou
que se ao aos à às é são ser foi era está estão estou estava ter tem têm tinha pelo pela pelos pelas
mais menos muito muita muitos muitas seu sua seus suas meu minha meus minhas este esta isso isto
esse essa aquele aquela até após como quando onde também já não sim lá aqui eu você vocês ele ela
eles elas nós me te lhe nos vos qual quais quanto quanta quantos quantas oi olá ola bom boa dia
tarde noite tudo bem obrigado obrigada favor por então entao ainda só so mas porém porem pois
sobre entre qualquer algum alguma alguns algumas cada outro outra vou vai vamos pode posso podem
the a an of to in on at by for with without and or is are be was were been it its this that these
those from as into than then there their our your we you they he she not no yes can will would
could should do does did have has had i me my mine hi hello hey thanks thank please what which who
how when where why about just also any some each other
live lives living long take takes get gets got here much many still already now soon yet go going
moro mora morar tempo quero queria gostaria preciso precisa fica faz fazer sou agora acho achei saber
ajuda ajudar demais coisa gente alguém alguem ta tá pra né ne aí ai
tenho temos tive teve tinha tivemos estamos estive esteve fui foram seria seja sejam há havia houve vão
cadê cade fiz fez faço depois antes ontem amanhã amanha hoje sempre nunca nada todo toda todos todas assim ali cá
""".split())
# Conversational filler: greetings, thanks, politeness, hedges, chat shorthand. It says how a
# customer talks, not what they ask, so it weighs nothing in a match or in the floor.
FILLER = frozenset("""
oii oie opa eae eai salve bomdia boanoite boatarde tchau tchauzinho abraço abraços beijo bjs att atenciosamente
obrigadão obrigadinho brigado brigada valeu vlw agradeço agradecida agradecido grato grata gratidão
blz beleza joia jóia certo certinho ok okay okey entendi entendido perfeito show top legal massa ótimo otimo
kk kkk kkkk kkkkk haha hahaha rs rsrs
vc vcs voce tb tbm td tds q pq porque pf pfv pfvr gentileza poderia poderiam consegue conseguem
dúvida duvida dúvidas duvidas pergunta perguntar informação informacao informações informacoes
queria gostaria gostaria saber sabe sei favor urgente urgencia urgência ajudinha
pessoal gente moça moço amigo amiga senhor senhora sr sra
hi hello hey hiya thanks thank thx please pls good morning afternoon evening night bye cheers ok okay
i'm im i'd id like want wondering need know tell could would
obg obgd obgda brigadão brigadao tks ty appreciate appreciated grateful
""".split())
# Thanks as a verb, in any of its forms (agradeço, agradecer, agradecemos, agradecimento): by stem.
FILLER_STEMS = frozenset({"agradec"})
# English store words, read as the Portuguese word concepts use, so "installments" meets
# "parcela" and "hours" meets "horário" (applied to concepts and messages alike).
GLOSSARY = {
    "installment": "parcela", "installments": "parcela", "interest": "juros", "card": "cartão",
    "credit": "crédito", "payment": "pagamento", "pay": "pagar", "paid": "pago", "discount": "desconto",
    "coupon": "cupom", "shipping": "frete", "freight": "frete", "delivery": "entrega", "deliver": "entregar",
    "arrive": "chegar", "arrives": "chegar", "order": "pedido", "orders": "pedido", "tracking": "rastreio",
    "refund": "reembolso", "return": "devolução", "exchange": "troca",
    "warranty": "garantia", "guarantee": "garantia", "furniture": "móveis", "mattress": "colchão",
    "store": "loja", "shop": "loja", "pickup": "retirada", "password": "senha", "account": "conta",
    "invoice": "nota", "cancel": "cancelar", "address": "endereço", "hours": "horário", "service": "atendimento",
    "free": "grátis", "damaged": "avariado", "broken": "avariado", "assembly": "montagem", "gift": "presente",
    "wrapping": "embrulho", "wrap": "embrulho", "days": "dias", "day": "dias", "express": "expresso",
    "voucher": "vale-presente", "stock": "estoque", "fabric": "tecido", "linen": "linho", "sofa": "sofá",
    "arrived": "chegar", "wrong": "errado", "product": "produto", "products": "produto",
    "saturday": "sábado", "saturdays": "sábado", "sunday": "domingo", "sundays": "domingo", "weekend": "sábado",
    "bed": "cama", "table": "mesa", "chair": "cadeira", "shelf": "estante", "wardrobe": "guarda-roupa",
    "rug": "tapete", "carpet": "tapete", "wash": "lavar", "company": "empresa",
    "receipt": "nota", "cards": "cartão", "nights": "noites", "deadline": "prazo", "available": "disponível",
    "north": "norte", "northeast": "nordeste", "south": "sul", "southeast": "sudeste", "brand": "marca",
    "cancellation": "cancelamento", "refunds": "reembolso", "returns": "devolução", "notify": "avise",
    "ship": "entregar", "ships": "entregar",
}
# The floor (Index.relevant), in units of the most one word can tell (found in no other
# concept, named in the concept's name). A concept sharing two or more of the message's words
# must share MIN_SHARED: half of one rare word, or several common ones. A concept sharing one
# word only (a city, "capital", "conta") must share SINGLE, and that word must be at least
# COVER of what the message itself tells (each of its words weighed by rarity, a word no
# concept has as one unit), unless the message asks something of the store (CUES): so
# "qual a população de Recife?" injects nothing while "Sou de Recife, qual o prazo?" does. A
# word that shares only a short stem with the concept (valeu/vale; under STEM_MIN letters)
# counts STEM_ONLY of what it would; longer stems are the same word (parcelo/parcela).
# Chosen on tests/data/retrieval_labelled.json with scripts/retrieval_report.py; the held-out
# sets were not used to choose them.
MIN_SHARED = 0.4
SINGLE = 0.5
COVER = 0.3
STEM_ONLY = 0.5
STEM_MIN = 5
# A word no concept has, one typed letter away from one that some concept has (entrga, reembolço),
# is read as that word, weighing TYPO of it; only words of TYPO_MIN letters or more.
TYPO = 0.8
TYPO_MIN = 6
TYPO_MAX = 20
TYPO_TRIES = 16  # unknown words of one message looked up as typos, at most
TYPO_CACHE = 1024  # words whose candidates are kept per index (memory_bytes counts them at most)
# Once a concept passes, the others in the top_k follow it only when they share at least TAIL of
# what the best passing one shares.
TAIL = 0.2
_LOWER = "abcdefghijklmnopqrstuvwxyz"
# Words that ask the store for something (availability, permission, a purchase made).
CUES = frozenset("tem posso consigo comprei paguei pedi recebi can could".split())
FLOOR_CONCEPTS = 40

# Units a number may carry; only these (and CEPs) match as ranges.
_UNITS = {"dia": "dias", "dias": "dias", "day": "dias", "days": "dias",
          "x": "x", "vez": "x", "vezes": "x",
          "h": "h", "hr": "h", "hrs": "h", "hora": "h", "horas": "h", "hour": "h", "hours": "h",
          "mes": "meses", "meses": "meses", "month": "meses", "months": "meses",
          "semana": "semanas", "semanas": "semanas", "week": "semanas", "weeks": "semanas",
          "reais": "R$", "real": "R$", "%": "%"}
_TIMES = frozenset({"vez", "vezes"})  # a unit only when it counts installments (see analyze)
_INSTALLMENT_WORDS = ("parcel", "divid", "divis")
_UNIT_GAP = frozenset({"uteis", "corridos", "business", "working"})  # "2 dias úteis", "1-2 business days"
_RANGE_JOIN = frozenset({"a", "-", "ate", "to", "e"})
_UP_TO = frozenset({"ate", "within"})
_FROM = frozenset({"acima", "partir", "above", "over"})
# "mais de 3 dias", "passa de 7 dias": from the number on.
_FROM_DE = frozenset({"acima", "partir", "mais", "passa", "passar", "passou", "passando"})
_NEGATIONS = frozenset({"nao", "nunca", "jamais", "not", "never"})
_CEP_WORDS = frozenset({"cep", "ceps", "zip"})
_NOT_CEP = frozenset({"pedido", "pedidos", "order", "protocolo", "nota", "nf", "n", "no", "numero", "#"})
_TOKEN = re.compile(r"""
    (?P<cep>(?<![\d.,])\d{5}-?\d{3}(?!\d|[.,-]\d))        # 13083-970, 13083970
  | (?P<cepx>(?<![\dx])(?=[\dx]{5}(?![\dx]))\d{2,3}x{2,3})  # 13xxx
  | (?P<money>r\$|us\$)
  | (?P<sign>[%#-])
  | (?P<num>\d+(?:[.,]\d+)*)
  | (?P<word>[^\W\d_]+)
""", re.UNICODE | re.VERBOSE)
_INF = float("inf")

_PT = snowballstemmer.stemmer("portuguese")
_EN = snowballstemmer.stemmer("english")
# Any other inflection of the glossary's English words (wrapped, refunded, delivering), by English stem.
_GLOSSARY_STEMS = {_EN.stemWord(word): pt for word, pt in GLOSSARY.items()}
_STEMS: dict[str, tuple[str, str]] = {}
_WORDS: dict[str, Optional[tuple[str, str]]] = {}
_LETTERS = re.compile(r"[^\W\d_]+", re.UNICODE)
_DIGIT = re.compile(r"\d")
_FOLD: dict[str, str] = {}
_PLURAL = (("oes", "ao"), ("aes", "ao"), ("ais", "al"), ("eis", "el"), ("ois", "ol"), ("ns", "m"),
           ("res", "r"), ("zes", "z"), ("les", "l"))


def _fold(word: str) -> str:
    folded = _FOLD.get(word)
    if folded is None:
        folded = "".join(c for c in unicodedata.normalize("NFKD", word) if not unicodedata.combining(c))
        if len(_FOLD) < 200_000:
            _FOLD[word] = folded
    return folded


# Typed with or without accents ("obrigadao", "ate").
_SKIP = frozenset(STOPWORDS | FILLER | {_fold(word) for word in STOPWORDS | FILLER})


def singular(folded: str) -> str:
    """A folded word brought to the singular (móveis → movel, cartões → cartao, frete → frete)."""
    if len(folded) < 4 or not folded.endswith("s"):
        return folded
    for plural, single in _PLURAL:
        if folded.endswith(plural) and len(folded) > len(plural) + 2:
            return folded[: -len(plural)] + single
    return folded if folded.endswith(("ss", "us", "is")) else folded[:-1]


def _forms(word: str) -> tuple[str, str]:
    """(index term, singular form) of one lowercase word, memoised: stemming is the slow part."""
    found = _STEMS.get(word)
    if found is None:
        single = singular(_fold(word))
        found = (_EN.stemWord(_PT.stemWord(single)), single)
        if len(_STEMS) < 200_000:
            _STEMS[word] = found
    return found


def _glossed(word: str) -> str:
    """The Portuguese word concepts use for an English store word in any inflection, else the word."""
    found = GLOSSARY.get(word)
    if found is None and word.isascii():
        found = _GLOSSARY_STEMS.get(_EN.stemWord(word))
    return found or word


def _word(word: str) -> Optional[tuple[str, str]]:
    """(index term, singular form) of a lowercase word, or None for a stopword or filler."""
    found = _WORDS.get(word, False)
    if found is False:
        found = None if word in _SKIP or _fold(word) in _SKIP or _PT.stemWord(word) in FILLER_STEMS \
            else _forms(_glossed(word))
        if len(_WORDS) < 200_000:
            _WORDS[word] = found
    return found


def stem(word: str) -> str:
    """The index term for one lowercase word."""
    return _forms(word)[0]


def raw_forms(text: str) -> list[tuple[str, str]]:
    """(index term, singular form) of every word and number of a text, stopwords and filler
    included (for reading phrases: "não chegou" is not "chegou")."""
    return [_forms(word) for word in _WORD.findall(text.lower())]


class Interval(NamedTuple):
    """A number a text states, as the range of values it covers, with its unit ('cep' for a CEP's
    5-digit prefix)."""

    unit: str
    low: float
    high: float


@dataclass(slots=True)
class Analysis:
    """What a text says, for the index: its word terms (with the singular form each was written
    in, to tell inflection from accident), whole numbers, and intervals."""

    words: list[tuple[str, str]]
    numbers: list[str]
    intervals: list[Interval]

    def terms(self) -> list[str]:
        return [term for term, _ in self.words] + self.numbers


def _value(text: str) -> Optional[float]:
    """A written number: 1.800 and 1,5 the Brazilian way; 39.90 as a decimal."""
    if "," in text:
        text = text.replace(".", "").replace(",", ".", 1).replace(",", "")
    elif re.fullmatch(r"\d{1,3}(\.\d{3})+", text):
        text = text.replace(".", "")
    try:
        return float(text)
    except ValueError:
        return None


def analyze(text: str, open_ranges: bool = True, shorthand: bool = False) -> Analysis:
    """Words and numbers of a text. `open_ranges`: "até 30 dias" and "acima de R$199" cover
    everything up to or from the number (what a concept states, not what a message asks).
    `shorthand`: read chat shorthand as the word it stands for ("hj" is "hoje"; a message's)."""
    text = text.lower()
    if _DIGIT.search(text) is None:  # the common case, and the fast one: words only
        words = _LETTERS.findall(text)
        if shorthand:
            words = [SHORTHAND.get(word, word) for word in words]
        return Analysis([found for word in words if (found := _word(word))], [], [])
    word_of = _word if not shorthand else lambda word: _word(SHORTHAND.get(word, word))
    tokens = [(m.lastgroup, m.group()) for m in _TOKEN.finditer(text)]
    words: list[tuple[str, str]] = []
    numbers: list[str] = []
    intervals: list[Interval] = []
    i, n = 0, len(tokens)

    def word_at(j: int) -> str:
        return _fold(tokens[j][1]) if 0 <= j < n and tokens[j][0] in ("word", "sign") else ""

    def installments(at: int, unit_at: int) -> bool:
        """Whether "N vezes" at `at` counts installments ("em 3 vezes", "parcelar em 10 vezes",
        "10 vezes sem juros"), not times in general ("tentei 2 vezes", "7 vezes 8")."""
        near = [word_at(k) for k in range(max(0, at - 3), at)]
        return word_at(unit_at + 1) == "sem" or any(w in ("em", "ate") or w.startswith(_INSTALLMENT_WORDS)
                                                    for w in near if w)

    def unit_after(j: int) -> tuple[Optional[str], int]:
        at = j - 1
        if word_at(j) in _UNIT_GAP:
            j += 1
        if 0 <= j < n and tokens[j][0] in ("word", "sign") and word_at(j) in _UNITS and (
                word_at(j) not in _TIMES or installments(at, j)):
            after = word_at(j + 1)
            return _UNITS[word_at(j)], j + 1 + (after in _UNIT_GAP)
        return None, j

    while i < n:
        kind, text_ = tokens[i]
        if kind == "word":
            if found := word_of(text_):
                words.append(found)
            i += 1
            continue
        if kind not in ("num", "cep", "cepx"):
            i += 1
            continue
        money = i > 0 and tokens[i - 1][0] == "money"
        before = [word_at(j) for j in ((i - 2, i - 3) if money else (i - 1, i - 2))]
        ident = any(w in _NOT_CEP for w in before[:2])
        low = high = 0.0
        unit: Optional[str] = None
        if kind == "cep" and not ident:
            unit, low = "cep", float(text_[:5])
            high = low
        elif kind == "cepx":
            digits = text_.rstrip("x")
            unit, low, high = "cep", float(digits.ljust(5, "0")), float(digits.ljust(5, "9"))
        elif kind == "num" and len(text_) == 5 and not ident and (
                any(w in _CEP_WORDS for w in [word_at(j) for j in range(max(0, i - 3), i)])
                or (word_at(i + 1) in ("-", "a") and i + 2 < n and len(tokens[i + 2][1]) == 5)):
            unit, low = "cep", float(text_)
            high = low
        value = _value(text_) if kind != "cep" or ident else None
        j = i + 1
        if unit is None and value is not None:
            unit, j = unit_after(j)
            if money:
                unit = "R$"
            low = high = value
            if unit is None and word_at(j) in _RANGE_JOIN and j + 1 < n and tokens[j + 1][0] == "num":
                unit = unit_after(j + 2)[0]  # "1 a 2 dias": the unit is written once, at the end
        if unit is None:
            # A bare number: matched whole, never a lone digit (list numbers, "3 mais 3").
            if value is not None and (len(text_) > 1 or "." in text_ or "," in text_):
                numbers.append("#" + (str(int(value)) if value.is_integer() else str(value)))
            i += 1
            continue
        # A range: "1 a 2 dias", "13000-13999", "13xxx-13999", "R$50 a R$500".
        k = j
        if word_at(k) in _RANGE_JOIN and (word_at(k) != "e" or "entre" in before):
            k += 1
            if 0 <= k < n and tokens[k][0] == "money":
                k += 1
            if k < n and tokens[k][0] in ("num", "cep"):
                end_text = tokens[k][1]
                if unit == "cep":
                    end = float(end_text[:5]) if len(end_text.replace("-", "")) in (5, 8) else None
                else:
                    end = _value(end_text)
                    later, k2 = unit_after(k + 1)
                    if later is not None and later != unit and low == high and unit != "R$":
                        end = None
                    elif later is not None:
                        k = k2 - 1
                if end is not None and end >= low:
                    high, j = end, k + 1
        if open_ranges and low == high:
            if before[0] in _UP_TO:
                low = 0.0
            elif before[0] in _FROM or (before[0] == "de" and before[1] in _FROM_DE):
                # "não pode passar de 30 dias", "nunca mais de 5 dias": up to the number
                negated = any(word_at(k) in _NEGATIONS for k in range(i - (5 if money else 4), i - 2))
                if negated:
                    low = 0.0
                else:
                    high = _INF
        if unit == "semanas":  # "2 semanas" is 14 days: concepts count in days
            unit, low, high = "dias", low * 7, high * 7
        intervals.append(Interval(unit, low, high))
        i = j
    return Analysis(words, numbers, intervals)


def terms(text: str) -> list[str]:
    """Index terms of a text, in order, stopwords removed."""
    return analyze(text).terms()


def plain_words(text: str) -> set[str]:
    """The baseline's view of a text: lowercase words, nothing else."""
    return set(_WORD.findall(text.lower()))


@dataclass(frozen=True, slots=True)
class Doc:
    """What the index keeps of one concept: its stored bytes, what the block shows, and its
    terms (ids into the index's vocabulary) with their field-weighted counts. The body is not
    kept parsed: `concept` parses the bytes again when load_knowledge needs it. A concept
    restored from a snapshot has no bytes (`data` None): load_knowledge reads it from S3."""

    name: str
    etag: str
    data: Optional[bytes]
    description: str
    type: str
    provenance: str
    confidence: float
    links: tuple[str, ...]
    slot: int
    length: float
    term_ids: array
    counts: array
    recency: float
    spans: tuple[tuple[str, float, float, float], ...] = ()  # (unit, low, high, field-weighted count)

    @property
    def concept(self) -> Concept:
        if self.data is None:
            raise ValueError(f"{self.name}: restored from a snapshot without its text")
        return parse(self.data)


# Per-object costs sys.getsizeof cannot see from the outside (CPython 3.11-3.13, 64-bit; checked
# against tracemalloc by tests/test_snapshot.py): a Doc with its slots, tuples and dict entry; a
# term's _Postings with its two numpy headers and its dict entries; one span tuple of four floats.
_DOC_OVERHEAD = 360
_POSTINGS_OVERHEAD = 360
_SPAN_BYTES = 160
_BY_FORM_BYTES = 40
_TYPO_BYTES = 120


class Hit(NamedTuple):
    """One search result (a tuple: made for every hit of every turn, so it is cheap)."""

    name: str
    score: float
    doc: Doc
    coverage: float = 1.0  # what the concept shares with the message, in rare words (see MIN_SHARED)


def _analyze(concept: Concept) -> tuple[dict[str, float], float, dict[Interval, float], set[tuple[str, str]]]:
    tf: dict[str, float] = {}
    spans: dict[Interval, float] = {}
    forms: set[tuple[str, str]] = set()
    length = 0.0
    fields = {"name": concept.name.replace("-", " "), "description": concept.description, "body": concept.body}
    for field, weight in FIELD_WEIGHTS:
        analysis = analyze(fields[field])
        forms.update(analysis.words)
        for term in analysis.terms():
            tf[term] = tf.get(term, 0.0) + weight
            length += weight
        for interval in analysis.intervals:
            spans[interval] = spans.get(interval, 0.0) + weight
            length += weight
    return tf, length, spans, forms


# Shared empty arrays, never written to: a term costs no arrays of its own until it needs them.
_NO_SLOTS, _NO_WEIGHTS = np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.float32)
_NO_PENDING_SLOTS, _NO_PENDING_COUNTS = array("i"), array("f")


class _Postings:
    """One term's postings: slots and BM25 weights as numpy arrays, plus appends not yet merged."""

    __slots__ = ("slots", "weights", "pending_slots", "pending_counts", "live", "scaled", "scaled_for")

    def __init__(self) -> None:
        self.slots, self.weights = _NO_SLOTS, _NO_WEIGHTS
        # Appends not merged yet, as compact C arrays: no Python object per posting. Shared
        # empty ones until the first append (most terms of a restored index never get one).
        self.pending_slots, self.pending_counts = _NO_PENDING_SLOTS, _NO_PENDING_COUNTS
        self.live = 0
        # The weights times idf, and the (concept count, live, postings) they were scaled for:
        # reused by every query until one of the three changes.
        self.scaled = self.weights
        self.scaled_for: Optional[tuple[int, int, int]] = None

    @property
    def pending(self) -> int:
        return len(self.pending_slots)

    def idf_weights(self, n_docs: int) -> np.ndarray:
        key = (n_docs, self.live, len(self.slots))
        if self.scaled_for != key:
            idf = _idf(n_docs, self.live)
            self.scaled, self.scaled_for = self.weights * idf, key
        return self.scaled


def _weight(tf: float, norm: float) -> float:
    return tf * (K1 + 1) / (tf + norm)


class Index:
    """One agent's concepts, searchable.

    Each posting keeps its BM25 term weight (idf is applied per query, from the live
    document frequency), so a query is a handful of vectorised numpy operations per query
    word. Changes touch only the changed concept's postings; a removed concept's postings
    stay, masked as dead, until they outnumber the live ones and the index is compacted; the
    weights are recomputed only when the average concept length drifts by more than 10%.
    Not thread-safe: one request at a time per container.
    """

    def __init__(self) -> None:
        self.docs: dict[str, Doc] = {}
        self._postings: dict[str, _Postings] = {}
        self._by_slot: list[Optional[Doc]] = []
        self._vocab: dict[str, int] = {}
        self._terms: list[str] = []
        self._dead: list[int] = []
        self._dead_slots = np.zeros(0, dtype=np.int64)
        self._recency = np.zeros(64, dtype=np.float64)
        self._total_length = 0.0
        self._weighted_avg = 0.0  # the average length the weights were computed with
        self._live_postings = 0
        self._dead_postings = 0
        # Each stem's singular forms seen in any concept since the index was built: a message
        # word whose form is not among them shares only a stem, maybe by accident (valeu/vale).
        # A lone form is kept as the string itself (most stems have one), several as a set.
        self._forms: dict[str, str | set[str]] = {}
        self._form_writes = 0
        # Every form to its term, for reading typos; built on the first typo after a change.
        self._by_form: dict[str, str] = {}
        self._by_form_at = -1
        self._typos: dict[str, tuple[str, ...]] = {}
        # Numbers with a unit, and CEPs: unit -> slot -> (low, high, count); as arrays per
        # unit, built on the first query after a change.
        self._spans: dict[str, dict[int, list[tuple[float, float, float]]]] = {}
        self._span_arrays: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = {}

    def __len__(self) -> int:
        return len(self.docs)

    def etag(self, name: str) -> Optional[str]:
        doc = self.docs.get(name)
        return doc.etag if doc else None

    def _norm(self, length: float) -> float:
        return K1 * (1 - B + B * length / self._weighted_avg) if self._weighted_avg else K1

    def upsert(self, name: str, etag: str, concept: Concept, data: bytes) -> None:
        self.remove(name)
        tf, length, spans, forms = _analyze(concept)
        slot = len(self._by_slot)
        if slot >= len(self._recency):
            grown = np.zeros(len(self._recency) * 2, dtype=np.float64)
            grown[: len(self._recency)] = self._recency
            self._recency = grown
        ids = array("i", (self._term_id(t) for t in tf))
        doc = Doc(name, etag, data, concept.description, concept.type, concept.provenance, concept.confidence,
                  tuple(concept.links), slot, length, ids, array("f", tf.values()), concept.updated_at.timestamp(),
                  tuple((span.unit, span.low, span.high, count) for span, count in spans.items()))
        for term, form in forms:
            self._add_form(term, form)
        self._add_spans(doc)
        self.docs[name] = doc
        self._by_slot.append(doc)
        self._recency[slot] = doc.recency
        self._total_length += length
        if not self._weighted_avg:
            self._weighted_avg = length or 1.0
        for term, count in tf.items():
            postings = self._postings.get(term)
            if postings is None:
                postings = self._postings[term] = _Postings()
            if not postings.pending:
                postings.pending_slots, postings.pending_counts = array("i"), array("f")
            postings.pending_slots.append(slot)
            postings.pending_counts.append(count)
            postings.live += 1
        self._live_postings += len(ids)

    def _add_spans(self, doc: Doc) -> None:
        for unit, low, high, count in doc.spans:
            self._spans.setdefault(unit, {}).setdefault(doc.slot, []).append((low, high, count))
            self._span_arrays.pop(unit, None)

    def _spans_of(self, unit: str) -> Optional[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
        """(lows, highs, slots, BM25 weights) of the unit's live intervals."""
        found = self._span_arrays.get(unit)
        if found is None:
            by_slot = self._spans.get(unit)
            if not by_slot:
                return None
            rows = [(low, high, slot, _weight(count, self._norm(self._by_slot[slot].length)))
                    for slot, spans in by_slot.items() for low, high, count in spans]
            lows, highs, slots, weights = zip(*rows)
            found = self._span_arrays[unit] = (np.array(lows), np.array(highs), np.array(slots, dtype=np.int64),
                                               np.array(weights))
        return found

    def _add_form(self, term: str, form: str) -> None:
        self._form_writes += 1
        held = self._forms.get(term)
        if held is None:
            self._forms[term] = form
        elif type(held) is str:
            if held != form:
                self._forms[term] = {held, form}
        else:
            held.add(form)

    def _known(self, term: str) -> bool:
        postings = self._postings.get(term)
        return postings is not None and postings.live > 0

    def _corrected(self, form: str) -> Optional[str]:
        """The term a word no concept has was probably meant as: one typed letter away (dropped,
        added, swapped or wrong, never the first) from a form some live concept has, when exactly
        one live term is that close. Only words of TYPO_MIN to TYPO_MAX letters: shorter ones
        are too often other words, longer ones no word."""
        if not TYPO_MIN <= len(form) <= TYPO_MAX or not form.isalpha() or not form.isascii():
            return None
        if self._by_form_at != self._form_writes:
            self._by_form = {f: term for term, held in self._forms.items()
                             for f in ((held,) if type(held) is str else held)}
            self._by_form_at = self._form_writes
            self._typos = {}
        # Each word's candidate terms are kept (a bounded number of words), and which are live
        # is asked at every query: a removed concept's terms drop out as they would from a
        # snapshot of this index.
        near = self._typos.get(form)
        if near is None:
            by_form = self._by_form
            first, rest = form[0], form[1:]
            splits = [(rest[:i], rest[i:]) for i in range(len(rest) + 1)]
            candidates = {left + right[1:] for left, right in splits if right}
            candidates.update(left + right[1] + right[0] + right[2:] for left, right in splits if len(right) > 1)
            candidates.update(left + c + right[1:] for left, right in splits if right for c in _LOWER)
            candidates.update(left + c + right for left, right in splits for c in _LOWER)
            # Into a word as long as the typo's bound: a short store word is too near common
            # words ("frente" is not "frete").
            near = tuple(sorted({term for c in candidates if len(c) >= TYPO_MIN - 1
                                 and (term := by_form.get(first + c)) is not None}))
            if len(self._typos) < TYPO_CACHE:
                self._typos[form] = near
        live = [term for term in near if self._known(term)]
        return live[0] if len(live) == 1 else None

    def _has_form(self, term: str, form: str) -> bool:
        held = self._forms.get(term)
        return held == form if type(held) is str else held is not None and form in held

    def _forms_of(self, term: str) -> list[str]:
        held = self._forms.get(term)
        return [] if held is None else [held] if type(held) is str else sorted(held)

    def _term_id(self, term: str) -> int:
        found = self._vocab.get(term)
        if found is None:
            found = self._vocab[term] = len(self._terms)
            self._terms.append(term)
        return found

    def remove(self, name: str) -> None:
        doc = self.docs.pop(name, None)
        if doc is None:
            return
        self._by_slot[doc.slot] = None
        self._dead.append(doc.slot)
        for unit, *_ in doc.spans:
            self._spans[unit].pop(doc.slot, None)
            self._span_arrays.pop(unit, None)
        self._total_length -= doc.length
        for term_id in doc.term_ids:
            term = self._terms[term_id]
            postings = self._postings[term]
            postings.live -= 1
            if postings.live == 0:  # the whole list goes, with the dead postings it held
                self._dead_postings -= len(postings.slots) + postings.pending - 1
                del self._postings[term]
            else:
                self._dead_postings += 1
        self._live_postings -= len(doc.term_ids)

    def settle(self) -> None:
        """After a batch of changes: compact or re-weight when needed, merge pending postings."""
        if not self.docs:
            self.__init__()
            return
        average = self._total_length / len(self.docs)
        if self._dead_postings > max(1024, self._live_postings):
            self._compact()
        elif abs(average - self._weighted_avg) / self._weighted_avg > 0.10:
            self._reweight(average)
        for postings in self._postings.values():
            if postings.pending:
                self._merge(postings)

    def _merge(self, postings: _Postings) -> None:
        slots = np.frombuffer(postings.pending_slots, dtype=np.int32)
        counts = np.frombuffer(postings.pending_counts, dtype=np.float32)
        norms = np.array([self._norm(self._lengths_of(slot)) for slot in postings.pending_slots], dtype=np.float32)
        weights = counts * (K1 + 1) / (counts + norms)
        postings.slots = np.concatenate((postings.slots, slots))
        postings.weights = np.concatenate((postings.weights, weights.astype(np.float32)))
        del slots, counts  # release the buffer exports before replacing the arrays
        postings.pending_slots, postings.pending_counts = _NO_PENDING_SLOTS, _NO_PENDING_COUNTS
        postings.scaled_for = None

    def _lengths_of(self, slot: int) -> float:
        doc = self._by_slot[slot]
        return doc.length if doc is not None else self._weighted_avg

    def _reweight(self, average: float) -> None:
        """Recompute every live weight for a new average length (dead postings are dropped)."""
        self._weighted_avg = average
        self._rebuild(renumber=False)

    def _compact(self) -> None:
        self._weighted_avg = self._total_length / len(self.docs)
        self._rebuild(renumber=True)

    def _rebuild(self, renumber: bool) -> None:
        docs = sorted(self.docs.values(), key=lambda d: d.slot)
        self._span_arrays = {}  # their weights follow the average length
        if renumber:
            self._by_slot, self._dead, self._spans = [], [], {}
            self._recency = np.zeros(max(64, len(docs) * 2), dtype=np.float64)
        collected: dict[str, tuple[list[int], list[float]]] = {}
        for doc in docs:
            if renumber:
                moved = dataclasses.replace(doc, slot=len(self._by_slot))
                self.docs[doc.name] = moved
                self._by_slot.append(moved)
                self._recency[moved.slot] = doc.recency
                doc = moved
                self._add_spans(doc)
            norm = self._norm(doc.length)
            for term_id, count in zip(doc.term_ids, doc.counts):
                entry = collected.setdefault(self._terms[term_id], ([], []))
                entry[0].append(doc.slot)
                entry[1].append(_weight(count, norm))
        self._postings = {}
        for term, (slots, weights) in collected.items():
            postings = _Postings()
            postings.slots = np.array(slots, dtype=np.int32)
            postings.weights = np.array(weights, dtype=np.float32)
            postings.live = len(slots)
            self._postings[term] = postings
        self._dead_postings = 0
        self._live_postings = sum(len(d.term_ids) for d in self.docs.values())
        self._dead = []  # rebuilt from live concepts only: nothing left to mask
        self._dead_slots = np.zeros(0, dtype=np.int64)

    # ------------------------------------------------------------ snapshots and size
    def export_state(self) -> tuple[dict, list[bytes]]:
        """What a snapshot keeps of the index: everything a search reads, without the concepts'
        text. Slots are renumbered densely in their order (so recency ties break the same way);
        the postings keep their weights, so a restored index scores exactly as this one."""
        for postings in self._postings.values():
            if postings.pending:
                self._merge(postings)
        docs = sorted(self.docs.values(), key=lambda d: d.slot)
        renumber = np.full(len(self._by_slot) + 1, -1, dtype=np.int64)
        renumber[[d.slot for d in docs]] = np.arange(len(docs))
        used = sorted({term_id for d in docs for term_id in d.term_ids})
        term_of = {old: new for new, old in enumerate(used)}
        terms = [self._terms[old] for old in used]
        doc_terms = array("i", (term_of[t] for d in docs for t in d.term_ids))
        doc_counts = array("f", (c for d in docs for c in d.counts))
        posting_terms, slot_parts, weight_parts = [], [], []
        for term_id, term in enumerate(terms):
            postings = self._postings[term]
            moved = renumber[postings.slots]
            live = moved >= 0
            posting_terms.append([term_id, int(live.sum())])
            slot_parts.append(moved[live].astype(np.int32))
            weight_parts.append(postings.weights[live])
        header = {
            "terms": terms,
            "forms": [self._forms_of(term) for term in terms],
            "weighted_avg": self._weighted_avg,
            "docs": [[d.name, d.etag, d.description, d.type, d.provenance, d.confidence, list(d.links), d.length,
                      d.recency, len(d.term_ids), [list(span) for span in d.spans]] for d in docs],
            "postings": posting_terms,
        }
        empty_i, empty_f = np.zeros(0, np.int32), np.zeros(0, np.float32)
        blobs = [doc_terms.tobytes(), doc_counts.tobytes(),
                 np.concatenate(slot_parts or [empty_i]).astype(np.int32).tobytes(),
                 np.concatenate(weight_parts or [empty_f]).astype(np.float32).tobytes()]
        return header, blobs

    @classmethod
    def from_state(cls, header: dict, blobs: list[bytes]) -> "Index":
        """The index `export_state` described (ValueError, KeyError or TypeError when it is not one)."""
        index = cls()
        terms = [str(t) for t in header["terms"]]
        index._terms = terms
        index._vocab = {term: i for i, term in enumerate(terms)}
        if len(index._vocab) != len(terms):
            raise ValueError("repeated term")
        forms_of = header["forms"]
        if len(forms_of) != len(terms):
            raise ValueError("forms do not match the terms")
        for term, forms in zip(terms, forms_of):
            for form in forms:
                index._add_form(term, str(form))
        doc_terms, doc_counts = array("i"), array("f")
        doc_terms.frombytes(blobs[0])
        doc_counts.frombytes(blobs[1])
        slots = np.frombuffer(blobs[2], dtype=np.int32)
        weights = np.frombuffer(blobs[3], dtype=np.float32)
        rows = header["docs"]
        if len(doc_terms) != len(doc_counts) or len(slots) != len(weights):
            raise ValueError("postings do not add up")
        index._recency = np.zeros(max(64, len(rows) * 2), dtype=np.float64)
        at = 0
        for slot, (name, etag, description, type_, provenance, confidence, links, length, recency, n_terms,
                   spans) in enumerate(rows):
            term_ids, counts = doc_terms[at:at + n_terms], doc_counts[at:at + n_terms]
            if len(term_ids) != n_terms:
                raise ValueError("postings do not add up")
            at += n_terms
            doc = Doc(str(name), str(etag), None, str(description), str(type_), str(provenance), float(confidence),
                      tuple(str(link) for link in links), slot, float(length), term_ids, counts, float(recency),
                      tuple((str(unit), float(low), float(high), float(count)) for unit, low, high, count in spans))
            index.docs[doc.name] = doc
            index._by_slot.append(doc)
            index._recency[slot] = doc.recency
            index._total_length += doc.length
            index._live_postings += n_terms
            index._add_spans(doc)
        if len(index.docs) != len(rows) or at != len(doc_terms):
            raise ValueError("repeated or missing concepts")
        at = 0
        for term_id, n in header["postings"]:
            postings = _Postings()
            postings.slots, postings.weights = slots[at:at + n], weights[at:at + n]
            postings.scaled = postings.weights
            postings.live = int(n)
            at += n
            index._postings[terms[term_id]] = postings
        if at != len(slots) or (len(slots) and int(slots.max()) >= len(rows)):
            raise ValueError("postings do not add up")
        index._weighted_avg = float(header["weighted_avg"])
        return index

    def shape(self) -> tuple[int, int, int, int]:
        """Counts that move whenever the index changes: a cheap test before measuring it again."""
        return len(self.docs), self._live_postings, self._dead_postings, len(self._postings)

    def memory_bytes(self) -> int:
        """About what the index holds in memory (its objects, arrays and strings), for the
        container's memory budget; measured, not guessed per concept (a concept's text is
        kept only when it was fetched, not restored)."""
        size = sys.getsizeof(self.docs) + sys.getsizeof(self._by_slot) + sys.getsizeof(self._postings)
        size += sys.getsizeof(self._vocab) + sys.getsizeof(self._terms) + self._recency.nbytes
        for doc in self.docs.values():
            size += (_DOC_OVERHEAD + sys.getsizeof(doc.name) + sys.getsizeof(doc.etag) + sys.getsizeof(doc.description)
                     + (sys.getsizeof(doc.data) if doc.data is not None else 0)
                     + sys.getsizeof(doc.term_ids) + sys.getsizeof(doc.counts)
                     + sum(sys.getsizeof(link) for link in doc.links) + _SPAN_BYTES * len(doc.spans))
        for term, postings in self._postings.items():
            size += _POSTINGS_OVERHEAD + sys.getsizeof(term) + postings.slots.nbytes + postings.weights.nbytes
            if postings.scaled is not postings.weights:
                size += postings.scaled.nbytes
            size += 8 * postings.pending
        if self._by_form:
            # The typo cache fills without changing `shape`, so it is counted full. Measured with
            # tracemalloc: 36 bytes per form of `_by_form` (its strings are the index's own),
            # 110 per cached word (the word, its candidates).
            size += sys.getsizeof(self._by_form) + _BY_FORM_BYTES * len(self._by_form) + TYPO_CACHE * _TYPO_BYTES
        for forms in self._forms.values():
            size += sys.getsizeof(forms) if type(forms) is str else (
                sys.getsizeof(forms) + sum(sys.getsizeof(form) for form in forms))
        return size

    def _match(self, query: str, read: bool = True) -> Optional[tuple]:
        """Per slot, the BM25 score and what the concept shares with the message as `relevant`
        weighs it; what the message tells; each matched term's slots; which concepts share more
        than places (None when the message names none). None when nothing matches. `read`: add
        what the lexicon reads into the message and read typos (retrieval), or not (search)."""
        n_docs = len(self.docs)
        if not n_docs:
            return None
        analysis = analyze(query, open_ranges=False, shorthand=read)
        if not analysis.words and not analysis.numbers and not analysis.intervals:
            return None
        n = len(self._by_slot)
        # The floor reads rarity as if the agent had at least FLOOR_CONCEPTS concepts: in a
        # small agent every word is in a large share of them, and would tell nothing.
        floor_docs = max(n_docs, FLOOR_CONCEPTS)
        rarest = _idf(floor_docs, 0)
        scale = 1.0 / (rarest * (K1 + 1))
        slot_arrays: list[np.ndarray] = []
        weight_arrays: list[np.ndarray] = []
        ratios: list = []  # per entry, what the floor counts per unit of score (a number, or one per slot)
        placed: list[bool] = []  # per entry, whether its term names a place
        told = 0.0  # what the message's own words tell, in the same units (see `relevant`)
        reading = lexicon().read(query, self._known) if read else _NOTHING_READ
        place_terms = lexicon().place_terms
        names = _proper_names(query) if read and not query.islower() else ()

        def ratio_of(postings: _Postings) -> float:
            # The same for every word in an agent of FLOOR_CONCEPTS or more.
            return scale if n_docs >= FLOOR_CONCEPTS else (
                _idf(floor_docs, postings.live) * scale / _idf(n_docs, postings.live))

        def postings_of(term: str) -> Optional[_Postings]:
            postings = self._postings.get(term)
            if postings is not None and postings.pending:
                self._merge(postings)
            return postings

        # The message's own words (a typo read as the word it meant, weighing TYPO).
        used: set[str] = set(term for term, _ in analysis.words)
        tried = 0  # unknown words looked up as typos: a long message reads only its first TYPO_TRIES
        for term, form in [*dict(analysis.words).items(), *((number, None) for number in analysis.numbers)]:
            place = term in reading.places or term in place_terms
            postings, factor = postings_of(term), 1.0
            if term in reading.grouped:  # part of a place's name: it tells, but is matched with its reading below
                told += _idf(floor_docs, postings.live) / rarest if postings is not None else 1.0
                continue
            if postings is None and read and form is not None and len(form) >= TYPO_MIN and tried < TYPO_TRIES:
                tried += 1
                meant = self._corrected(form) if form not in names else None
                if meant is not None:
                    if meant in used:
                        continue  # the word it meant is in the message already
                    used.add(meant)
                    term, postings, factor = meant, postings_of(meant), TYPO
            if postings is None:
                told += 1.0 if form is not None else 0.0  # a word no concept has: as rare as can be
                continue
            told += _idf(floor_docs, postings.live) / rarest
            ratio = ratio_of(postings)
            if form is not None and factor == 1.0 and len(term) < STEM_MIN and not self._has_form(term, form):
                ratio *= STEM_ONLY  # a short stem shared by accident (valeu/vale)
            weights = postings.idf_weights(n_docs)
            slot_arrays.append(postings.slots)
            weight_arrays.append(weights if factor == 1.0 else weights * factor)
            ratios.append(ratio)
            placed.append(place)
        # What the lexicon read into them: each reading counts as one word, the best of its words
        # for each concept, weighing what the reading weighs; it tells nothing the message did not.
        used -= reading.grouped
        for added in reading.added:
            weight_of = dict(sorted(added.words, key=lambda word: word[1]))  # a word both own and added: own
            found = [(postings, weight) for term, weight in weight_of.items()
                     if term not in used and (postings := postings_of(term)) is not None]
            used.update(weight_of)
            if len(found) == 1:
                postings, weight = found[0]
                slot_arrays.append(postings.slots)
                weight_arrays.append(postings.idf_weights(n_docs) * weight)
                ratios.append(ratio_of(postings))
                placed.append(added.place)
            elif found:
                # Per concept, the best of the reading's words: written in ascending order of
                # weight, the last write to a slot is its largest.
                slots = np.concatenate([postings.slots for postings, _ in found])
                weights = np.concatenate([postings.idf_weights(n_docs) * weight for postings, weight in found])
                order = np.argsort(weights, kind="stable")
                best = np.zeros(n)
                best[slots[order]] = weights[order]
                if n_docs >= FLOOR_CONCEPTS:
                    ratio = scale  # the same for every word
                else:
                    shared_by = np.zeros(n)
                    shared_by[slots[order]] = (weights * np.concatenate(
                        [np.full(len(postings.slots), ratio_of(postings)) for postings, _ in found]))[order]
                    ratio = None
                slots = np.flatnonzero(best)
                slot_arrays.append(slots)
                weight_arrays.append(best[slots])
                ratios.append(ratio if ratio is not None else shared_by[slots] / best[slots])
                placed.append(added.place)
        term_slots = list(slot_arrays)  # per message term, the concepts that have it (for counting shared terms)
        for unit, low, high in set(analysis.intervals):
            spans = self._spans_of(unit)
            if spans is None:
                continue
            lows, highs, slots, weights = spans
            inside = (lows <= high) & (highs >= low)
            if inside.any():
                # A number inside a stated range weighs as a word found in that many concepts.
                live = len(np.unique(slots[inside]))
                told += _idf(floor_docs, live) / rarest
                term_slots.append(np.unique(slots[inside]))  # a concept stating two ranges that hold it: one term
                slot_arrays.append(slots[inside])
                weight_arrays.append(weights[inside] * _idf(n_docs, live))
                ratios.append(_idf(floor_docs, live) * scale / _idf(n_docs, live))
                placed.append(False)
        if not slot_arrays:
            return None
        # One C pass sums every query word's weights per concept.
        all_slots = np.concatenate(slot_arrays)
        scores = np.bincount(all_slots, weights=np.concatenate(weight_arrays), minlength=n)
        if self._dead:
            if len(self._dead) != len(self._dead_slots):
                self._dead_slots = np.array(self._dead, dtype=np.int64)
            scores[self._dead_slots] = 0.0
        # What is shared, in units of the most one word can tell (a word no other concept has,
        # weighed as if the name said it), stems shared by accident discounted.
        if all(type(r) is float for r in ratios) and max(ratios) - min(ratios) < 1e-9:
            shared = scores * ratios[0]
        else:
            shared = np.bincount(all_slots, minlength=n,
                                 weights=np.concatenate([w * r for w, r in zip(weight_arrays, ratios)]))
        # Which concepts share something besides places (None: the message names no place).
        grounded = None
        if any(placed):
            kept = [slots for slots, place in zip(slot_arrays, placed) if not place]
            grounded = np.bincount(np.concatenate(kept), minlength=n) > 0 if kept else np.zeros(n, dtype=bool)
        return scores, shared, told, term_slots, grounded

    def _ranked(self, scores: np.ndarray, wanted: int) -> list[tuple[float, float, int]]:
        n = len(scores)
        wanted = min(n, wanted)
        candidates = np.argpartition(scores, n - wanted)[n - wanted:] if wanted < n else np.arange(n)
        return sorted(zip(scores[candidates].tolist(), self._recency[candidates].tolist(), candidates.tolist()),
                      reverse=True)

    def search(self, query: str, top_k: int, min_score: float = 0.0) -> list[Hit]:
        """The best `top_k` concepts scoring at least `min_score`, with no relevance floor and the
        words as written (listing known concepts, the studio's search); recency breaks ties."""
        matched = self._match(query, read=False)
        return self._hits(matched, top_k, min_score) if matched is not None else []

    def relevant(self, query: str, top_k: int, min_score: float = 0.0) -> list[Hit]:
        """What retrieval injects: `search`, once some concept passes the floor (MIN_SHARED with
        two shared words or more; with one, SINGLE and COVER of the message, or a question cue)."""
        matched = self._match(query)
        if matched is None:
            return []
        scores, shared, told, term_slots, grounded = matched
        ok = (scores > 0) & (scores >= min_score) & (shared >= min(MIN_SHARED, SINGLE))
        if grounded is not None:
            ok &= grounded  # a concept sharing only places ("Recife", "capitais") answers nothing asked
        candidates = np.flatnonzero(ok)  # the rest of the floor reads only these (a few dozen at most)
        if not len(candidates):
            return []
        their = shared[candidates]
        alone = np.bincount(np.concatenate(term_slots), minlength=len(scores))[candidates] < 2
        several = ~alone & (their >= MIN_SHARED)
        passes = several | (alone & (their >= SINGLE) & (their >= COVER * told))
        if not passes.any() and not CUES.isdisjoint(_fold(w) for w in _LETTERS.findall(query.lower())):
            passes = several | (alone & (their >= SINGLE))
        if not passes.any():
            return []
        # Below the best answer, a concept that shares a small part of what it shares is noise.
        return self._hits(matched, top_k, min_score, TAIL * float(their[passes].max()), grounded)

    def _hits(self, matched: tuple, top_k: int, min_score: float, least_shared: float = 0.0,
              grounded: Optional[np.ndarray] = None) -> list[Hit]:
        scores, shared = matched[:2]
        if grounded is not None:  # a concept sharing only places with the message is never injected
            scores = np.where(grounded, scores, 0.0)
        hits = []
        for score, _, slot in self._ranked(scores, top_k):
            if score <= 0 or score < min_score:
                break
            if shared.item(slot) < least_shared:
                continue
            doc = self._by_slot[slot]
            hits.append(Hit(doc.name, round(score, 4), doc, round(shared.item(slot), 3)))
        return hits


_NOTHING_READ = Reading([], set(), set())


def _proper_names(text: str) -> set[str]:
    """Folded singular forms of the words written with a capital in mid-sentence ("a Marcela
    comprou"): names, never read as a typo of a store word (Marcela is not parcela)."""
    found = set()
    for match in _LETTERS.finditer(text):
        word = match.group()
        if word[0].isupper() and not word.isupper():
            before = text[:match.start()].rstrip()
            if before and before[-1] not in ".!?:\n":
                found.add(_forms(word.lower())[1])
    return found


def _idf(n_docs: int, df: int) -> float:
    return math.log(1 + (n_docs - df + 0.5) / (df + 0.5))


class OverlapScan:
    """The baseline (seed 000's Index::Scan): count shared lowercase words, scanning every concept."""

    def __init__(self, concepts: Iterable[Concept]):
        self._docs = [(c.name, plain_words(f"{c.name} {c.description} {c.body}"), c.updated_at.timestamp())
                      for c in concepts]

    def search(self, query: str, top_k: int) -> list[tuple[str, float]]:
        words = plain_words(query)
        scored = [(len(words & doc_words), recency, name) for name, doc_words, recency in self._docs]
        best = heapq.nlargest(top_k, (s for s in scored if s[0] > 0))
        return [(name, float(overlap)) for overlap, _, name in best]
