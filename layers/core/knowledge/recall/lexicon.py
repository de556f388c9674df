"""What customers write, read in the words stores write: a Lexicon built once per ETag of the agent's
vocabulary.yaml (`lexicon_for`), chat shorthand, and Brazil's places (a city adds its state and
region; a concept that shares only places with a message is no answer to it). Retrieval adds these
words to a message, never to a concept, weighing EXPANDED of the customer's own.
docs/retrieval.md, "How a message is read" and "An agent's vocabulary"."""

from __future__ import annotations

import functools
from collections import OrderedDict
from typing import Callable, NamedTuple, Optional, Sequence

from knowledge.recall.analysis import analyze
from knowledge.recall.terms import LETTERS, SHORTHAND, WORD, fold, raw_forms, read_word, singular, term_and_form

# Cities and states, each with what it adds: its state (for a city) and its region. Names that
# are also common words are read as places only after a preposition (WORDLIKE, AMBIGUOUS).
_REGIONS = {
    "norte": "Acre|Rio Branco; Amapá|Macapá; Amazonas|Manaus; Estado do Pará|Belém|Ananindeua|Santarém; "
             "Rondônia|Porto Velho; Roraima|Boa Vista; Tocantins|Palmas",
    "nordeste": "Alagoas|Maceió; Bahia|Salvador|Feira de Santana|Vitória da Conquista; Ceará|Fortaleza|"
                "Juazeiro do Norte; Maranhão|São Luís|Imperatriz; Paraíba|João Pessoa|Campina Grande; "
                "Pernambuco|Recife|Olinda|Jaboatão|Caruaru|Petrolina; Piauí|Teresina; "
                "Rio Grande do Norte|Natal|Mossoró; Sergipe|Aracaju",
    "sudeste": "Espírito Santo|Vitória|Vila Velha|Serra; Minas Gerais|MG|Belo Horizonte|BH|Uberlândia|Contagem|"
               "Juiz de Fora|Betim|Montes Claros; Rio de Janeiro|RJ|Rio|Niterói|São Gonçalo|Duque de Caxias|"
               "Nova Iguaçu|Petrópolis|Volta Redonda; São Paulo|SP|Sampa|Campinas|Guarulhos|Osasco|Santo André|"
               "São Bernardo|Santos|Ribeirão Preto|Sorocaba|São José dos Campos|Jundiaí|Piracicaba",
    "sul": "Paraná|PR|Curitiba|Londrina|Maringá|Ponta Grossa|Cascavel; Rio Grande do Sul|Porto Alegre|"
           "Caxias do Sul|Pelotas|Canoas; Santa Catarina|SC|Florianópolis|Floripa|Joinville|Blumenau",
    "centro-oeste": "Distrito Federal|DF|Brasília; Goiás|Goiânia|Anápolis; Mato Grosso|Cuiabá; "
                    "Mato Grosso do Sul|Campo Grande",
}
# Abroad: what a store writes of it is that it does not ship there.
ABROAD = "Argentina|Buenos Aires|Uruguai|Montevidéu|Paraguai|Chile|Bolívia|Colômbia|Venezuela|México|Canadá|" \
         "Estados Unidos|EUA|USA|Miami|Orlando|Nova York|New York|Portugal|Lisboa|Espanha|França|Paris|Itália|" \
         "Alemanha|Inglaterra|Londres|Europa|Japão|China|Angola|Moçambique|Argentine|Uruguay|Mexico|Canada|" \
         "United States|Spain|France|Italy|Germany|England|London|Europe|Japan"
# Names that are also words: read as places only after "em", "pra", "para" ("moro em Natal",
# not "antes do Natal", "presente de Natal").
WORDLIKE = frozenset("Natal|Vitória|Salvador|Santos|Palmas|Serra|Contagem|Imperatriz|Canoas|Pelotas".split("|"))
# Short or shared names: read as places after any preposition ("moro no Rio", "sou de BH").
AMBIGUOUS = frozenset("Boa Vista|Campo Grande|Rio Branco|Sampa|Floripa|BH|Betim|Belém|Rio|PR|SC".split("|"))
_AFTER = {True: frozenset("em pra para in to".split()),
          False: frozenset("em de pra para no na do da in to from".split())}
# Words that many place names share ("Rio Grande do Sul", "Campo Grande", "Espírito Santo"): a
# place's reading neither adds them nor counts them as the name (agendamento-entrega-*grandes*
# has nothing to do with Rio Grande do Sul); a one-word name ("Rio") is still itself.
GENERIC = frozenset("""rio grande grandes santo santa são sao mato grosso porto boa campo nova novo velho alegre
belo vila serra ponta grossa federal distrito gerais claros montes branco vista feira juiz fora do da de dos das
estado""".split())
STATE_WORDS = {"Rio de Janeiro": "rio janeiro"}  # where the generic word is what stores write ("estado do Rio")
# Words that name a place in any text; a word after a street word is a street's name.
PLACE_WORDS = "capital capitais cidade cidades estado estados região regiões bairro bairros interior " \
              "litoral rua avenida alameda travessa praça city state region street downtown"
STREET_WORDS = frozenset("rua avenida av alameda travessa praça street avenue".split())
EXPANDED = 0.7
EXPANDED_KNOWN = 0.5
# Words that ask the store for something (availability, permission, a purchase made): a message that
# says one (Reading.asks) passes the floor with one shared word (knowledge.recall.index.SINGLE).
CUES = frozenset("tem posso consigo comprei paguei pedi recebi can could".split())




def key(term: str, form: str) -> str:
    """How a word is compared: by stem when the stem is long enough to say one thing (atrasou,
    atrasado), else by its exact singular form ("para" is not "parado", "pago" not "pagar")."""
    return term if len(term) >= 5 else "=" + form


class Entry(NamedTuple):
    """One reading: the words a customer writes, in order; the words it adds; whether they are
    places; and, for a name that is also a word, the words one of which must come before it."""

    words: tuple[str, ...]
    adds: str
    place: bool
    after: Optional[frozenset]  # the words one of which must come right before it (a name that is also a word)


# A vocabulary's readings: (what customers write: phrases, what the store writes).
Readings = Sequence[tuple[Sequence[str], str]]


def _words(text: str) -> tuple[str, ...]:
    return tuple(WORD.findall(text.lower()))


def entries(readings: Readings = ()) -> list[Entry]:
    """Every reading, the agent's vocabulary first, then the places."""
    found = [Entry(_words(phrase), adds, False, None) for phrases, adds in readings for phrase in phrases]
    return [entry for entry in found if entry.words] + _place_entries()


@functools.lru_cache(maxsize=1)
def _place_entries() -> list[Entry]:
    """The places' readings: the same for every agent, worked out once per container."""
    words = _words
    found = []
    for region, states in _REGIONS.items():
        for group in states.split(";"):
            names = [name.strip() for name in group.split("|")]
            state = names[0]
            state_words = STATE_WORDS.get(state) or " ".join(
                word for word in WORD.findall(state.lower()) if word not in GENERIC)
            for name in names:
                adds = f"{region} {state_words}"
                after = _AFTER[True] if name in WORDLIKE else _AFTER[False] if name in AMBIGUOUS else None
                found.append(Entry(words(name), adds, True, after))
    for name in ABROAD.split("|"):
        found.append(Entry(words(name), "internacional international exterior fora brasil", True, None))
    return [entry for entry in found if entry.words]


class Added(NamedTuple):
    """What one reading adds: index terms, each with what it weighs of a word the customer wrote;
    together they count as one word (for each concept, the best of them), not as several. A
    place's reading holds the name's own words too ("rio", "grande" of Rio Grande do Sul)."""

    words: list[tuple[str, float]]
    place: bool
    # The customer's words of a vocabulary reading that no concept has: the reading says what they
    # mean, so they tell what it tells (once), not each as much as a word no concept has.
    explains: frozenset[str] = frozenset()


class Reading(NamedTuple):
    """What the lexicon adds to one message; the message's own terms that name a place; and those
    of them that a place's reading holds (counted there, not as words of their own)."""

    added: list[Added]
    places: set[str]
    grouped: set[str]
    explained: frozenset[str] = frozenset()  # every reading's `explains`
    asks: bool = False  # the message says one of CUES


class _Word(NamedTuple):
    term: str  # the index term
    key: str  # how phrases compare it (see `key`)
    bucket: str  # where readings starting with it are kept: its first four letters, folded, singular
    cue: bool  # its letters, folded, are one of CUES (or several words, one of which is)


_WORDS: dict[str, _Word] = {}


class Lexicon:
    """The readings, kept by the first letters of their first word; a reading's words are stemmed
    only when a message first has a word in its bucket (stemming all of them costs a cold
    container a quarter of a second)."""

    def __init__(self, readings: Readings = ()) -> None:
        self._fold, self._singular, self._forms, self._analyze = fold, singular, term_and_form, analyze
        self._split = WORD.findall
        self._entries = entries(readings)
        self._buckets: dict[str, list[int]] = {}
        for at, entry in enumerate(self._entries):
            self._buckets.setdefault(self._bucket(entry.words[0]), []).append(at)
        for ats in self._buckets.values():
            ats.sort(key=lambda at: -len(self._entries[at].words))  # the longest phrase first
        self._ready: dict[str, dict[str, list[tuple[tuple[str, ...], list[tuple[str, str]], Entry]]]] = {}
        self._adds: dict[str, list[tuple[str, str]]] = {}
        self._words = _WORDS  # how a word reads depends on no agent's readings: one memo per container
        # Index terms that are places wherever they are written (a region, "capital", "rua"); a
        # city's or state's own words ("grande", "santo") are places only where the whole name is.
        self.place_terms: set[str] = {term for word in PLACE_WORDS.split() + list(_REGIONS)
                                      for term, form in raw_forms(word) if form != "centro"}
        self._street = {self._word(word).key for word in STREET_WORDS}
        self._after = {words: {self._word(word).key for word in words} for words in _AFTER.values()}

    def _bucket(self, word: str) -> str:
        return self._singular(self._fold(word))[:4]

    def _word(self, word: str) -> _Word:
        """One lowercase word of a message, shorthand read, memoised."""
        found = self._words.get(word)
        if found is None:
            said = SHORTHAND.get(word, word)
            term, form = self._forms(said)
            # The cue reads the word as written (no shorthand), its letters only, as LETTERS splits it.
            found = _Word(term, key(term, form), self._bucket(said),
                          not CUES.isdisjoint(fold(letters) for letters in LETTERS.findall(word)))
            if len(self._words) < 20_000 and len(word) <= 20 and not word.isdigit():  # words, not numbers or junk
                self._words[word] = found
        return found

    def _bucket_readings(self, bucket: str) -> dict[str, list[tuple[tuple[str, ...], list[tuple[str, str]], Entry]]]:
        """A bucket's readings by their first word's key, longest first: worked out on first use."""
        ready = self._ready.get(bucket)
        if ready is None:
            ready = self._ready[bucket] = {}
            for at in self._buckets[bucket]:
                entry = self._entries[at]
                said = tuple(self._word(word).key for word in entry.words)
                adds = self._adds.get(entry.adds)
                if adds is None:
                    adds = self._adds[entry.adds] = self._analyze(entry.adds).words
                ready.setdefault(said[0], []).append((said, adds, entry))
        return ready

    def read(self, text: str, known: Callable[[str], bool] = lambda term: False) -> Reading:
        """What the lexicon adds to a message. `known(term)`: whether the agent's own concepts use
        the word; a reading whose words they all use weighs EXPANDED_KNOWN, not EXPANDED (the store
        wrote them: "estorno" must not rank "reembolso" first), except a place's."""
        raws = self._split(text.lower())
        memo = self._words  # `_word`'s memo read here first: most words are in it
        found = [memo.get(word) or self._word(word) for word in raws]
        words = [word.key for word in found]
        buckets = self._buckets
        added: list[Added] = []
        places: set[str] = set()
        grouped: set[str] = set()
        explained: set[str] = set()
        n = len(words)
        # Phrases may overlap: "não pago a entrega" is "não pago" and "pago a entrega".
        for i in [i for i, word in enumerate(found) if word.bucket in buckets or word.key in self._street]:
            matched = False
            readings = self._bucket_readings(found[i].bucket).get(words[i], ()) if found[i].bucket in buckets else ()
            for said, adds, entry in readings:
                if tuple(words[i:i + len(said)]) != said:
                    continue
                if entry.after is not None and (i == 0 or words[i - 1] not in self._after[entry.after]):
                    continue
                place = entry.place
                weight = EXPANDED_KNOWN if not place and all(known(word.term) for word in found[i:i + len(said)]) \
                    else EXPANDED
                if place:
                    name = found[i:i + len(said)]
                    own = [word.term for word, raw in zip(name, raws[i:i + len(said)])
                           if len(said) == 1 or raw not in GENERIC]  # stopwords have no postings anyway
                    grouped.update(word.term for word in name)
                    added.append(Added([(term, 1.0) for term in own] + [(term, weight) for term, _ in adds], True))
                    places.update(term for term, _ in adds)
                    places.update(own)
                else:
                    # What the message's own words would tell: a stopword tells nothing, read or not.
                    unknown = frozenset(word.term for word, raw in zip(found[i:i + len(said)], raws[i:i + len(said)])
                                        if not known(word.term) and read_word(raw) is not None)
                    added.append(Added([(term, weight) for term, _ in adds], False, unknown))
                    explained.update(unknown)
                matched = True
                break
            if not matched and words[i] in self._street and i + 1 < n:
                places.add(found[i + 1].term)
        return Reading(added, places, grouped, frozenset(explained), any(word.cue for word in found))


_LEXICON: Optional[Lexicon] = None
_BY_ETAG: "OrderedDict[str, Lexicon]" = OrderedDict()
BY_ETAG_KEPT = 64  # lexicons kept per container, the least recently asked for dropped first


def lexicon() -> Lexicon:
    """The lexicon of an agent without a vocabulary (the places only), built on first use."""
    global _LEXICON
    if _LEXICON is None:
        _LEXICON = Lexicon()
    return _LEXICON


def lexicon_for(readings: Readings, etag: Optional[str]) -> Lexicon:
    """The lexicon of a vocabulary: built once per ETag of its file (agents whose files hold the
    same text share one), never per turn; no readings is the places' lexicon."""
    if not readings:
        return lexicon()
    if etag is None:
        return Lexicon(readings)
    found = _BY_ETAG.get(etag)
    if found is None:
        found = _BY_ETAG[etag] = Lexicon(readings)
        while len(_BY_ETAG) > BY_ETAG_KEPT:
            _BY_ETAG.popitem(last=False)
    else:
        _BY_ETAG.move_to_end(etag)
    return found
