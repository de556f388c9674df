"""How a claim is read into terms, for the same-claim rule (knowledge.learning.claims): sentences of
folded, stemmed terms, one spelling per amount, time and date, negations kept as '!word', words that
say nothing about a claim dropped, a misspelt long word read as the record's. Nothing here may join
two different claims: every equivalence is a spelling of the same thing.
docs/contract.md, "The same claim without a model"."""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

import snowballstemmer

# Words that say nothing about what a claim states: articles, of/in/at, present forms of
# ser/estar/ter/be. Not here on purpose: negations, ou/or, com/with, para/por/to/for/by/from
# ("pago pela loja" / "pago para a loja"), antes/depois, até/após, acima/abaixo, mais/menos,
# só/todos/qualquer, and past or future forms (foi, era, será, was, were).
STOPWORDS = frozenset("""
o a os as um uma uns umas de da do das dos em na no nas nos num numa ao aos e que ser sao esta estao
ter tem ha este esta estes estas isso isto esse essa esses essas disso desse dessa deste desta nesse nessa
neste nesta aquele aquela seu sua seus suas lhe voce voces ele ela eles elas via tambem ja entao bem muito
the an of in on at is are be been being it its this that these those as there their our your
we you they he she his her also and
""".split())
# Greetings and courtesy: a clause made only of these (with no figure), or a sentence that opens
# with a greeting or a thank-you and says at most two other words, with no figure or negation
# ("Olá, tutor!", "Obrigado pela preferência!"), is no claim.
GREETINGS = frozenset("""
oi oie ola ei opa hey hi hello obrigado obrigada obrigados obg valeu tchau thanks thank
bye cheers abraco abracos att atenciosamente
""".split())
COURTESY = GREETINGS | frozenset("pessoal gente ta tah ok okay certo combinado beleza blz please ne viu".split())
# The closings of a support message, read as a greeting: "Qualquer dúvida, é só chamar!".
_CLOSINGS = re.compile(r"^\s*(?:qualquer duvida(?:,? e so (?:chamar|falar|perguntar|mandar mensagem))?|"
                       r"espero ter ajudado|estamos a disposicao|fico a disposicao|"
                       r"conte com a gente|conte sempre com a gente|tenha um otimo dia|ate mais|ate logo|um abraco|"
                       r"any questions|hope this helps|have a (?:nice|great|good) day)\b")
# Words that bound a claim ("só domingo", "apenas no Sul"): a greeting holding one says something.
_LIMITS = frozenset("so somente apenas only just exceto except todos todas all every nenhum nenhuma none".split())
_GREETING_PAIRS = re.compile(r"\b(?:bom dia|boa tarde|boa noite|ta bom|ta bem|tudo bem|tudo bom|good morning|"
                             r"good afternoon|good evening)\b")
# Stemming drops tense: "aceitava" and "aceita" share a stem but not a claim. These Portuguese
# past endings add a term of their own.
_PAST_ENDINGS = ("ava", "avam", "aram", "eram", "iram", "ou")
# Negations and exceptions: not stemmed, counted, and never stopwords. "no" is Portuguese's
# "em + o" or English's "no": it negates unless the text is plainly Portuguese (when unsure,
# a negation too many only sends the pair to the model).
NEGATIONS = frozenset("""
nao n nunca nem sem jamais exceto salvo nenhum nenhuma nada ninguem tampouco senao excecao
not never nor without except unless neither none nothing cannot excluding
""".split())
_ENGLISH_MARKERS = frozenset("the is are of and to for with on be can".split())
_PORTUGUESE_MARKERS = frozenset("o os de do da das dos e em na nas nos para com que".split())
# Spellings of one word: inflection the stemmer misses, number words, units, and the few
# synonyms that are exact in a store's claims. Nothing here may join two different claims.
CANONICAL = {
    "gratuito": "gratis", "gratuita": "gratis", "gratuitos": "gratis", "gratuitas": "gratis",
    "somente": "so", "apenas": "so", "only": "so",
    "depois": "apos", "over": "above",
    "uteis": "util", "h": "hora", "hs": "hora", "horas": "hora", "hr": "hora", "hrs": "hora", "hour": "hora",
    "hours": "hora", "vezes": "vez", "x": "vez", "reais": "brl", "real": "brl", "cento": "pct", "percent": "pct",
    "pra": "para", "pro": "para", "pelo": "por", "pela": "por", "pelos": "por", "pelas": "por",
}
_CANONICAL_TERMS = frozenset(CANONICAL.values())
_NEGATION_SPELLINGS = {"n": "nao", "cannot": "not"}
_UNITS = {
    "um": 1, "uma": 1, "dois": 2, "duas": 2, "tres": 3, "quatro": 4, "cinco": 5, "seis": 6, "sete": 7, "oito": 8,
    "nove": 9,
}
_TENS = {"vinte": 20, "trinta": 30, "quarenta": 40, "cinquenta": 50, "sessenta": 60, "setenta": 70,
         "oitenta": 80, "noventa": 90}
NUMBER_WORDS = {
    **{word: str(value) for word, value in _UNITS.items() if word not in ("um", "uma")},
    **{word: str(value) for word, value in _TENS.items()},
    "dez": "10", "onze": "11", "doze": "12", "treze": "13", "catorze": "14", "quatorze": "14", "quinze": "15",
    "dezesseis": "16", "dezessete": "17", "dezoito": "18", "dezenove": "19", "cem": "100",
    "one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6", "seven": "7", "eight": "8",
    "nine": "9", "ten": "10", "eleven": "11", "twelve": "12", "fifteen": "15", "twenty": "20", "thirty": "30",
}
# "vinte e cinco" is 25 (one amount, as "25" is), not 20 and 5.
_COMPOUND = re.compile(rf"\b({'|'.join(_TENS)}) e ({'|'.join(_UNITS)})\b")
MONTHS = {
    "janeiro": 1, "fevereiro": 2, "marco": 3, "abril": 4, "maio": 5, "junho": 6, "julho": 7, "agosto": 8,
    "setembro": 9, "outubro": 10, "novembro": 11, "dezembro": 12,
    "january": 1, "february": 2, "march": 3, "april": 4, "may": 5, "june": 6, "july": 7, "august": 8,
    "september": 9, "october": 10, "november": 11, "december": 12,
}
_MONTH = "|".join(MONTHS)
# "27 a 30 de novembro": both days are in November; "1º de abril": the ordinal is the day.
_DAY_RANGE = re.compile(rf"\b(\d{{1,2}})o?\s+(a|e|ate)\s+(\d{{1,2}})o?\s+de\s+({_MONTH})\b")
_DAY_OF_MONTH = re.compile(rf"\b(\d{{1,2}})o?\s+de\s+({_MONTH})\b")
_MONTH_DAY = re.compile(rf"\b({_MONTH})\s+(\d{{1,2}})(?:st|nd|rd|th)?\b")
_TOKEN = re.compile(
    r"(?P<money>r\$|us\$|\$)"
    r"|(?<![\d/])(?P<day>\d{1,2})/(?P<month>\d{1,2})(?:/(?P<year>\d{4}|\d{2}))?(?![\d/])"
    r"|(?P<clock>\d{1,2})(?:h|:)(?P<minutes>\d\d)(?!\d)"
    r"|(?P<number>\d+(?:[.,]\d+)*)(?P<suffix>[hxoa](?![^\W_])|%)?"
    r"|(?P<word>[^\W\d_]+(?:'[^\W\d_]+)?)"
    r"|(?P<percent>%)"
)
_PER_CENT = re.compile(r"\s*\bpor cento\b|\s*\bper ?cent\b")
_SENTENCE_END = re.compile(r"[.;!?]+(?=\s|$)|\n+")
_CLAUSE_END = re.compile(r",(?!\d)")
_WORDS = re.compile(r"[^\W\d_]+")
_PT = snowballstemmer.stemmer("portuguese")
_EN = snowballstemmer.stemmer("english")
# Search stems the same way (knowledge.recall.index); not imported from there, so consolidation's
# cold start does not load numpy.
_STEMS: dict[str, str] = {}
TYPO_MIN_LETTERS = 6


def fold(text: str) -> str:
    stripped = "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))
    return stripped.casefold()


def _stem(word: str) -> str:
    term = _STEMS.get(word)
    if term is None:
        term = _EN.stemWord(_PT.stemWord(word))
        if len(_STEMS) < 100_000:
            _STEMS[word] = term
    return term


def number(token: str) -> str:
    """One spelling per amount: R$199 = R$ 199,00; 1.299,90 = 1,299.90; 1.500 stays ambiguous."""
    separators = [c for c in token if c in ".,"]
    if not separators:
        return token.lstrip("0") or "0"
    if len(set(separators)) == 2:
        decimal = token[max(token.rfind("."), token.rfind(","))]
        whole, fraction = token.rsplit(decimal, 1)
        whole = whole.replace("." if decimal == "," else ",", "")
    elif len(separators) > 1:  # 1.000.000: grouping only
        whole, fraction = token.replace(separators[0], ""), ""
    else:
        whole, _, fraction = token.partition(separators[0])
        if len(fraction) == 3:  # 1.500 is 1500 in Portuguese and 1.5 in English: keep it as written
            return token
    whole = whole.lstrip("0") or "0"
    fraction = fraction.rstrip("0")
    return f"{whole}.{fraction}" if fraction else whole


def _portuguese(words: list[str]) -> bool:
    return sum(w in _PORTUGUESE_MARKERS for w in words) > sum(w in _ENGLISH_MARKERS for w in words)


def _dates_as_numbers(text: str) -> str:
    """Dates written in words, as day/month: '27 a 30 de novembro' -> '27/11 a 30/11'."""
    # Written with two digits of month: "24 de julho" is a date, "24/7" (always open) is not.
    text = _DAY_RANGE.sub(lambda m: f"{m[1]}/{MONTHS[m[4]]:02d} {m[2]} {m[3]}/{MONTHS[m[4]]:02d}", text)
    text = _DAY_OF_MONTH.sub(lambda m: f"{m[1]}/{MONTHS[m[2]]:02d}", text)
    return _MONTH_DAY.sub(lambda m: f"{m[2]}/{MONTHS[m[1]]:02d}", text)


def _date(match: re.Match) -> list[str]:
    day, month, year = int(match.group("day")), int(match.group("month")), match.group("year")
    if not (1 <= day <= 31 and 1 <= month <= 12) or match.group(0) == "24/7":  # 3/4, 24/7: no date
        return [f"#{day}", f"#{month}"] + ([f"#{number(year)}"] if year else [])
    out = [f"@{month}-{day}"]
    if year:
        out.append(f"#{2000 + int(year) if len(year) == 2 else int(year)}")
    return out


def _tokens(text: str, portuguese: bool) -> list[str]:
    """A clause's terms in order: stems, '#'-numbers, '@'-dates, negations as '!word', units as words."""
    out: list[str] = []
    currency = ""
    for match in _TOKEN.finditer(text):
        if match.group("money"):
            currency = "brl" if match.group("money") == "r$" else "usd"
            continue
        if match.group("day"):
            out += _date(match)
        elif match.group("clock"):
            out += [f"#{number(match.group('clock'))}", "hora"]
            if match.group("minutes") != "00":
                out.append(f"#{number(match.group('minutes'))}")
        elif match.group("number"):
            amount = match.group("number")
            if currency == "brl" and re.fullmatch(r"\d{1,3}(?:\.\d{3})+", amount):
                amount = amount.replace(".", "")  # R$ 1.500 is fifteen hundred reais
            out.append(f"#{number(amount)}")
            if currency:
                out.append(currency)  # R$199 and 199 reais both read "#199 brl"
            suffix = match.group("suffix")
            if suffix in ("h", "x", "%"):
                out.append({"h": "hora", "x": "vez", "%": "pct"}[suffix])
        elif match.group("percent"):
            out.append("pct")
        else:
            out.extend(_word_terms(match.group("word"), portuguese))
        currency = ""
    return out


def _word_terms(word: str, portuguese: bool) -> list[str]:
    if word.endswith("n't"):  # don't, can't, isn't: the auxiliary says nothing, the negation does
        return ["!not"]
    if word in NUMBER_WORDS:
        return [f"#{NUMBER_WORDS[word]}"]
    if word in NEGATIONS or (word == "no" and not portuguese):
        return [f"!{_NEGATION_SPELLINGS.get(word, word)}"]
    if word in STOPWORDS:
        return []
    word = CANONICAL.get(word, word)
    if word in _CANONICAL_TERMS:
        return [word]
    if len(word) > 4 and word.endswith(_PAST_ENDINGS):
        return [_stem(word), "~past"]
    return [_stem(word)]


def _courtesy(clause: str) -> bool:
    """A clause of greetings and courtesy only: "Oi", "tá bom", "pessoal"."""
    clause = _GREETING_PAIRS.sub(" oi ", clause)
    words = _WORDS.findall(clause)
    return bool(words) and not re.search(r"\d", clause) and all(w in COURTESY or w in STOPWORDS for w in words)


def _no_claim(sentence: str) -> bool:
    """A greeting or a thank-you: "Oi, pessoal!", "Obrigado pela preferência!", "Olá, tutor!"."""
    sentence = _GREETING_PAIRS.sub(" oi ", _CLOSINGS.sub(" oi ", sentence))
    words = _WORDS.findall(sentence)
    if not words or words[0] not in GREETINGS or re.search(r"\d", sentence):
        return False
    if any(word in NEGATIONS or word in NUMBER_WORDS or word in _UNITS or word in _LIMITS for word in words):
        return False  # "Oi, só domingo": a limit, a figure or a negation is a claim
    return sum(word not in COURTESY and word not in STOPWORDS for word in words) <= 2


@dataclass(frozen=True)
class Sentence:
    """A sentence's clauses (split at commas), each its terms in order."""

    clauses: tuple[tuple[str, ...], ...]

    @property
    def terms(self) -> tuple[str, ...]:
        return tuple(term for clause in self.clauses for term in clause)

    def told_by(self, record: "Sentence") -> bool:
        """This sentence is `record`'s clauses cut into pieces, each piece in its own order, the
        pieces in any order: "Das 9h às 17h, às terças, a clínica vacina" is "A clínica vacina às
        terças, das 9h às 17h"; a word moved inside a clause ("Aceitamos Amex, não aceitamos Visa" /
        "Aceitamos Visa, não aceitamos Amex"; "a loja reembolsa o cliente" / "o cliente reembolsa
        a loja") is not."""
        if sorted(self.terms) != sorted(record.terms):
            return False
        return _cover(record.clauses, 0, 0, Counter(self.clauses))


def _cover(clauses: tuple[tuple[str, ...], ...], index: int, at: int, pieces: Counter) -> bool:
    """Whether `pieces` cut `clauses[index][at:]` and every clause after it, each piece whole."""
    if index == len(clauses):
        return not +pieces
    clause = clauses[index]
    if at == len(clause):
        return _cover(clauses, index + 1, 0, pieces)
    for piece in [p for p, n in pieces.items() if n > 0 and clause[at:at + len(p)] == p]:
        pieces[piece] -= 1
        if _cover(clauses, index, at + len(piece), pieces):
            return True
        pieces[piece] += 1
    return False


@dataclass(frozen=True)
class Claim:
    sentences: tuple[Sentence, ...]
    body_sentences: tuple[Sentence, ...]

    @property
    def terms(self) -> frozenset[str]:
        return frozenset(term for sentence in self.sentences for term in sentence.terms)

    @property
    def negations(self) -> Counter:
        return Counter(term for sentence in self.sentences for term in sentence.terms if term.startswith("!"))


def _typo_of(a: str, b: str) -> bool:
    """`a` is `b` with one letter left out, doubled or added, or two neighbours swapped, past the
    first letter. A changed letter is no typo here: it joins real words ("interior" / "inferior",
    "Colombia" / "Columbia"), as a first letter does ("limitado" / "ilimitado")."""
    if a == b or a[:1] != b[:1] or abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        diff = [i for i in range(len(a)) if a[i] != b[i]]
        return (len(diff) == 2 and diff[1] == diff[0] + 1
                and a[diff[0]] == b[diff[1]] and a[diff[1]] == b[diff[0]])
    short, long = (a, b) if len(a) < len(b) else (b, a)
    i = next((i for i in range(len(short)) if short[i] != long[i]), len(short))
    return short[i:] == long[i + 1:]


def _respelt(text: str, known: frozenset[str], names: frozenset[str] = frozenset()) -> str:
    """`text` with each misspelt word read as the one word of `known` it is a typo of; a word
    written with a capital (`names`: a name, a place, a brand) is never respelt."""
    def fix(match: re.Match) -> str:
        word = match.group()
        if (word in known or word in names or len(word) < TYPO_MIN_LETTERS or word in NEGATIONS
                or word in NUMBER_WORDS):
            return word
        near = [other for other in known if len(other) >= TYPO_MIN_LETTERS and _typo_of(word, other)
                and other not in NEGATIONS and other not in NUMBER_WORDS]
        return near[0] if len(near) == 1 else word
    return _WORDS.sub(fix, text)


def words_of(*texts: str) -> frozenset[str]:
    return frozenset(word for text in texts for word in _WORDS.findall(fold(text)))


def read_claim(description: str, body: str, spelling: Iterable[str] = ()) -> Claim:
    """The claim's sentences of terms; `spelling`: the record's words, which a misspelt word is read as."""
    names = frozenset(fold(word) for word in _WORDS.findall(f"{description}\n{body}") if word[:1].isupper())
    description, body = fold(description), fold(body)
    known = frozenset(spelling)
    if known:
        description, body = _respelt(description, known, names), _respelt(body, known, names)
    portuguese = _portuguese(_WORDS.findall(f"{description}\n{body}"))
    head, sentences = _sentences(description, portuguese), _sentences(body, portuguese)
    return Claim(head + sentences, sentences)


def _sentences(text: str, portuguese: bool) -> tuple[Sentence, ...]:
    text = _COMPOUND.sub(lambda m: str(_TENS[m[1]] + _UNITS[m[2]]), _dates_as_numbers(text))
    text = _PER_CENT.sub("%", text)
    out = []
    for part in _SENTENCE_END.split(text):
        if _no_claim(part):
            continue
        clauses = [terms for clause in _CLAUSE_END.split(part)
                   if not _courtesy(clause) and (terms := _tokens(clause, portuguese))]
        if clauses:
            out.append(Sentence(tuple(tuple(clause) for clause in clauses)))
    return tuple(out)
