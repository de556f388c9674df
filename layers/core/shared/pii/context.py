"""What the PII detectors read around a match: sentence ends and cue words (Context), stop words and connectors,
product nouns and the word before a match."""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable

# A detector yields (start, end, redact); redact=False reserves the span as knowledge (a store's
# address) so that no later detector reads a name or a number inside it.
Span = tuple[int, int, bool]


def words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Common words that cannot be part of a street's name or a person's name ("a rua estava
# bloqueada no dia 12" is not an address).
STOP = words("""
a o as os um uma e é eh ou em no na nos nas num numa ao aos à às de do da dos das pelo pela
para pra pro por com sem que se mas não nao nem já ja ainda até ate foi era é está esta estava tá ta
tô to fica ficou tem ter têm tinha ser sou somos vai vou vem dia dias mês hoje ontem amanhã
agora aqui ali lá la onde quando como muito mais menos bem só so também tambem pois porque então
entao eu ele ela nós vocês voce você meu minha seu sua nosso nossa esse essa este esta isso isto
comprei fiz queria quero gostaria preciso recebi moro mora pedido pedidos obrigado obrigada
cliente favor perto esquina frente lado atrás atras próximo proximo depois antes
the and or of to in on at is was for with from my your our his her their it this that here there
i im i'm am are be by as near order please thanks hi hello not no
""")
CONNECTORS = words("de da do das dos d' di del du van von")

# Cue words: which side of the conversation an address belongs to (see shared.pii's docstring).
_STORE_WORDS = words("""
loja lojas filial filiais unidade showroom distribuição distribuicao depósito deposito armazém armazem
galpão galpao retirada retirar retire locker matriz sede fábrica fabrica quiosque nossa nosso nossas
nossos store shop warehouse pickup pick outlet our cd
""")
_PERSON_WORDS = words("""
endereço endereco casa apartamento apto moro mora moramos residência residencia resido reside entregar
entrega entregam entregue enviar envie enviem mandar manda mande mandem coleta coletar destinatário
destinatario destinatária destinataria cuidados live lives ship deliver send home address
""")
_CUE_REACH = 90
# Abbreviations whose dot does not end a sentence.
_ABBREVIATIONS = words("sr sra srta dr dra mr mrs ms av r tv al rod pça pca eng prof profa gal cel sen dep "
                       "pres n nº no st ave rd ln blvd apto ap apt bl conj cj km trav estr lgo sl qd lt")
_SENTENCE_MARK = re.compile(r"[!?;\n]|\.(?=\s|$)")
_WORD = re.compile(r"[^\W\d_][\w'’-]{0,40}+")


class Context:
    """What the context rules read from one text (sentence ends, cue words), each found once."""

    def __init__(self, text: str) -> None:
        self.text = text
        # Whether an earlier detector holds part of [start, end) (set by shared.pii.find).
        self.taken: Callable[[int, int], bool] = lambda start, end: False
        self._marks: tuple[list[int], list[int]] | None = None
        self._cues: tuple[list[int], list[int], list[bool]] | None = None

    def _sentence_marks(self) -> tuple[list[int], list[int]]:
        if self._marks is None:
            starts, ends = [], []
            for mark in _SENTENCE_MARK.finditer(self.text):
                if mark.group() == "." and self._abbreviation_before(mark.start()):
                    continue
                starts.append(mark.start())
                ends.append(mark.end())
            self._marks = starts, ends
        return self._marks

    def _abbreviation_before(self, dot: int) -> bool:
        start = dot
        while start > 0 and dot - start < 8 and self.text[start - 1].isalpha():
            start -= 1
        word = self.text[start:dot].lower()
        return len(word) == 1 or word in _ABBREVIATIONS

    def sentence_start(self, at: int) -> int:
        ends = self._sentence_marks()[1]
        index = bisect.bisect_right(ends, at)
        return ends[index - 1] if index else 0

    def sentence_end(self, at: int) -> int:
        starts = self._sentence_marks()[0]
        index = bisect.bisect_left(starts, at)
        return starts[index] if index < len(starts) else len(self.text)

    def _cue_words(self) -> tuple[list[int], list[int], list[bool]]:
        """Each cue word's start, end and whether it is the store's ("ponto de coleta", "nosso endereço")."""
        if self._cues is None:
            starts, ends, store = [], [], []
            previous = ["", ""]
            for word in _WORD.finditer(self.text):
                raw = word.group()
                lower = raw.lower()
                side = None
                if lower in _STORE_WORDS:
                    side = True
                elif lower in ("coleta", "retirada", "venda") and previous[0] == "ponto":
                    side = True
                elif lower in ("endereço", "endereco") and previous[1] in ("nosso", "nossa"):
                    side = True
                elif lower in _PERSON_WORDS:
                    side = False
                if side is not None:
                    starts.append(word.start())
                    ends.append(word.end())
                    store.append(side)
                previous = [previous[1], lower]
            self._cues = starts, ends, store
        return self._cues

    def is_store_address(self, start: int, end: int) -> bool:
        """The nearest cue in the sentence before the address decides; if none, the nearest after it."""
        starts, ends, store = self._cue_words()
        index = bisect.bisect_right(ends, start)
        if index and starts[index - 1] >= max(self.sentence_start(start), start - _CUE_REACH):
            return store[index - 1]
        index = bisect.bisect_left(starts, end)
        if index < len(starts) and ends[index] <= min(self.sentence_end(end), end + _CUE_REACH // 2):
            return store[index]
        return False


PRODUCT_NOUNS = words("""
sofá sofa poltrona cadeira mesa cama colchão colchao luminária luminaria abajur quadro tapete cortina
estante armário armario rack painel banqueta puff travesseiro jogo kit linha coleção colecao modelo
marca produto item edição edicao livro camiseta camisa tênis tenis bolsa mochila vestido calça calca
boneca brinquedo farinha fermento café cafe vinho cerveja chá cha biscoito perfume shampoo sabonete
creme ar-condicionado ventilador aquecedor geladeira fogão fogao panela panelas taça taças caneca
capa case fone aparador buffet cristaleira penteadeira cômoda comoda escrivaninha sapateira poltrona
air conditioner brand line model product collection shirt book chair sofa
""")
_CAPITALISED = re.compile(r"[A-ZÀ-Þ][a-zß-ÿ]")
_WORD_CHARS = "'’./-_"


def word_before(text: str, start: int) -> tuple[str, int] | None:
    """The word right before `start` (spaces apart) and where it starts."""
    end = start
    while end > 0 and start - end < 8 and text[end - 1] in " \t":
        end -= 1
    if end == start:
        return None
    begin = end
    while begin > 0 and end - begin < 40 and (text[begin - 1].isalnum() or text[begin - 1] in _WORD_CHARS):
        begin -= 1
    while begin < end and not text[begin].isalpha():
        begin += 1
    return (text[begin:end], begin) if begin < end else None


def _opens_sentence(text: str, start: int) -> bool:
    head = text[max(0, start - 4):start].rstrip()
    return not head or head[-1] in ".!?:;\n(\"'“"


def after_product_word(text: str, start: int, exempt: frozenset[str] = frozenset()) -> bool:
    """A product noun, or a capitalised word inside the sentence, right before `start`:
    "a Cadeira Dona Flor", "poltrona Seu Jorge", "o Sofá Avenida"."""
    before = word_before(text, start)
    if before is None:
        return False
    word, at = before
    if word.lower() in PRODUCT_NOUNS:
        return True
    return (_CAPITALISED.match(word) is not None and word.lower().rstrip(".") not in exempt
            and not _opens_sentence(text, at))
