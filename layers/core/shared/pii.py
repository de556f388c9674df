"""PII redaction: e-mail, cards (Luhn), CNPJ and CPF (check digits), IPs, phones, RG numbers, a
person's address and a person's name.

Each finding is replaced by a typed placeholder such as `[email]`, `[address]`, `[name]` or `[rg]`.
Detectors run in a fixed order and a later detector never looks inside an earlier finding (nor
inside a store's address), so an 11-digit CPF is not also read as a phone number. What is kept:

- A **store's address** is knowledge, not PII. A street address is the store's when the nearest
  cue before it in the same sentence (or, failing that, after it) names the store's side — loja,
  filial, unidade, showroom, CD, centro de distribuição, depósito, galpão, retirada, ponto de
  coleta, locker, "nossa"/"nosso", store, warehouse, pickup, "our" — rather than the customer's
  (moro, casa, meu endereço, entrega, coleta, ship to, deliver, my address...). No cue: a person's.
- A **product** named like a street or a person ("Sofá Avenida 3 lugares", "Cadeira Dona Flor",
  "Sr. Frio ar-condicionado"): the honorific or street word follows a capitalised word inside the
  sentence or a product noun, or the number is a quantity (followed by a unit or a noun).
- A **name** needs an honorific (Sr., Dona, Dr., Mrs....), a role (cliente, porteiro, vizinha...)
  followed by capitalised words, or "meu nome é"/"my name is"/"aos cuidados de" (any case).
- An **RG** is 2.3.3-D with its check digit, or, after RG/identidade/documento, 7 to 10 digits:
  "RG6" cables, "RGB" and Rio Grande (RG) stay. A phone is not read where an identifier word
  (pedido, ticket, ref, CEP...) names the number, nor in two years side by side.

Every pattern is linear: bounded repetitions between literal separators, no nested quantifier.
The labelled sets in tests/data/ and scripts/pii_report.py measure recall and near misses kept.
"""

from __future__ import annotations

import bisect
import ipaddress
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Iterator

KINDS = ("email", "card", "cnpj", "cpf", "ip", "phone", "rg", "address", "name")

# A detector yields (start, end, redact); redact=False reserves the span as knowledge (a store's
# address) so that no later detector reads a name or a number inside it.
Span = tuple[int, int, bool]


@dataclass(frozen=True)
class Finding:
    kind: str
    start: int
    end: int


@dataclass
class Redaction:
    text: str
    counts: Counter = field(default_factory=Counter)


def _digits(text: str) -> str:
    return "".join(ch for ch in text if ch.isdigit())


def _luhn(number: str) -> bool:
    total = 0
    for index, char in enumerate(reversed(number)):
        digit = int(char)
        if index % 2:
            digit *= 2
            if digit > 9:
                digit -= 9
        total += digit
    return total % 10 == 0


def _cpf_ok(number: str) -> bool:
    if len(number) != 11 or len(set(number)) == 1:
        return False
    for length in (9, 10):
        total = sum(int(d) * w for d, w in zip(number[:length], range(length + 1, 1, -1)))
        check = (total * 10) % 11 % 10
        if check != int(number[length]):
            return False
    return True


def _cnpj_ok(number: str) -> bool:
    if len(number) != 14 or len(set(number)) == 1:
        return False
    weights = [5, 4, 3, 2, 9, 8, 7, 6, 5, 4, 3, 2]
    for length in (12, 13):
        w = weights if length == 12 else [6] + weights
        total = sum(int(d) * k for d, k in zip(number[:length], w))
        check = 0 if total % 11 < 2 else 11 - total % 11
        if check != int(number[length]):
            return False
    return True


def _ip_ok(candidate: str) -> bool:
    try:
        ipaddress.ip_address(candidate)
    except ValueError:
        return False
    return "." in candidate or "::" in candidate or candidate.count(":") == 7


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# A number is "standalone" when no letter, digit or joining punctuation touches it:
# PED-48213 or BR123456789BR are identifiers, not PII.
_EDGE_L = r"(?<![\w@/\\.,-])"
_EDGE_R = r"(?![\w/\\-]|[.,]\d)"

_EMAIL = re.compile(r"(?<![\w.%+-])[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63})*\.[A-Za-z]{2,24}(?![\w-])")
_CARD = re.compile(_EDGE_L + r"\d(?:[ -]?\d){12,18}" + _EDGE_R)
_CNPJ = re.compile(_EDGE_L + r"\d{2}\.?\d{3}\.?\d{3}/?\d{4}-?\d{2}" + _EDGE_R)
_CPF = re.compile(_EDGE_L + r"\d{3}\.?\d{3}\.?\d{3}-?\d{2}" + _EDGE_R)
_IPV4 = re.compile(r"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?![\w]|\.\d)")
_IPV6 = re.compile(r"(?<![\w:])[0-9A-Fa-f]{0,4}(?::[0-9A-Fa-f]{0,4}){2,7}(?![\w:])")
# +55 (11) 98765-4321, +1 415 555 0132, +44 20 7946 0958
_PHONE_INTL = re.compile(r"(?<![\w+])\+\d{1,3}(?:[ .-]?\(?\d{1,4}\)?){1,5}(?![\w-])")
# (11) 98765-4321, 11 3456 7890, 11 9 8765 4321, 98765-4321: the last four digits set off by a separator
_PHONE_BR = re.compile(_EDGE_L + r"(?:\(\d{2}\)\s?|\d{2}[ .-])?(?:9[ .])?\d{4,5}[ .-]\d{4}" + _EDGE_R)
# 11987654321: an area code (11-99, no zero) and a mobile number starting with 9
_PHONE_BR_PLAIN = re.compile(_EDGE_L + r"\(?[1-9]{2}\)?9\d{8}" + _EDGE_R)
# A number that a word before it names as something else: pedido 2025 0042, ticket 4521-7788.
_IDENTIFIER_BEFORE = re.compile(
    r"(?i:\b(?:pedido|order|ticket|protocolo|chamado|nota|nf-?e?|ref|refer[eê]ncia|c[oó]digo|sku|lote|"
    r"rastreio|cep|zip|ordem|boleto|fatura|invoice|serial|s[eé]rie|modelo|vers[aã]o)\b\.?)"
    r"\s*(?:n[º°o]\.?\s*|n[uú]mero\s*|#\s*|:\s*)?$")
_TWO_YEARS = re.compile(r"(?:19|20)\d\d[ .-](?:19|20)\d\d")

# RG: 12.345.678-9 (or -X) on its own; after a cue word also 4.567.890, 34567890-1, 123456789.
_RG_STRONG = re.compile(r"(?<![\w.,/-])\d{2}\.\d{3}\.\d{3}-[\dXx](?![\w/-]|[.,]\d)")
_RG_LOOSE = re.compile(r"(?<![\w.,/])\d{1,2}\.\d{3}\.\d{3}(?:-[\dXx])?(?![\w/-]|[.,]\d)"
                       r"|(?<![\w.,/-])\d{7,9}(?:-[\dXx])?(?![\w/-]|[.,]\d)")
_RG_CUE = re.compile(r"(?i:\brg\b|\br\.g\.|\bidentidade\b|\bdocumento\b|\bssp\b)")
# MG-14.567.890: the issuing state written before the number.
_RG_STATE = re.compile(r"\b(?:AC|AL|AP|AM|BA|CE|DF|ES|GO|MA|MT|MS|MG|PA|PB|PR|PE|PI|RJ|RN|RS|RO|RR|SC|SP|SE|TO)[ -]?$")

# --- Addresses ---------------------------------------------------------------------------------

# Common words that cannot be part of a street's name or a person's name ("a rua estava
# bloqueada no dia 12" is not an address).
_STOP = _words("""
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
_CONNECTORS = _words("de da do das dos d' di del du van von")

# Street words. Abbreviations need their dot ("R.", "Tv.", "Rod.") except Av: "TV 50" is a television.
_STREET_PT = (r"(?i:rua|avenida|av\.?|avda\.|travessa|trav\.|tv\.|alameda|al\.|rodovia|rod\.|estrada|estr\.|"
              r"pra[çc]a|p[çc]a\.|largo|lgo\.|viela|beco|ladeira|servid[ãa]o|passagem)|R\.")
_STREET_EN = r"(?:Street|St\.?|Avenue|Ave\.?|Road|Rd\.?|Lane|Ln\.?|Drive|Dr\.?|Boulevard|Blvd\.?|Way|Court|Ct\.?|Place|Pl\.?|Terrace|Parkway|Highway|Hwy\.?)"
# A complement: apto 42, ap. 5B, bloco B, casa 2, sala 1204, conj. 71, 3º andar, fundos.
_UNIT_WORD = (r"(?i:ap(?:artamento|to|t)?\.?|bloco|bl\.?|casa|sala|sl\.?|conjunto|conj\.?|cj\.?|lote|lt\.?|"
              r"quadra|qd\.?|torre|galp[ãa]o|loja|suite|unit|piso)")
_UNIT = (r"(?:" + _UNIT_WORD + r"\s*\d{1,5}[A-Za-z]?(?![\w])"
         r"|" + _UNIT_WORD + r"\s+[A-Za-z](?![\w])"
         r"|\d{1,3}\s*[º°o]?\s*(?i:andar)(?![\w])|(?i:fundos|t[ée]rreo)(?![\w]))")
_UNITS = r"(?:\s*[,–—-]?\s*" + _UNIT + r"){0,4}"
# A word of a street's name, never the number's "km 22" or "s/n". The name is taken whole
# (possessive: no backtracking into it), which keeps a run of street words linear.
_NAME_TOKEN = r"(?:(?!(?i:km)\s*\d|[sS]/[nN])[^\W\d_][\w'’.-]{0,30}+|\d{1,2}(?=\s+de\s))"
_ADDRESS_PT = re.compile(
    r"(?<![\w.])(?=[^\W\d_])(?:" + _STREET_PT + r")(?![\w])\s*+"
    r"(?P<street>" + _NAME_TOKEN + r"(?:\s++" + _NAME_TOKEN + r"){0,6}+)"
    r"\s*,?\s*(?:(?i:n[º°o]\.?|n\.|n[uú]mero|num\.?)\s*)?"
    r"(?P<number>\d{1,2}\.\d{3}|\d{1,5}[A-Za-z]?|[sS]/[nN]|(?i:km)\s*\d{1,3}(?:[.,]\d{1,3})?)(?![\w%/]|[.,]\d)"
    r"(?P<units>" + _UNITS + r")")
_ADDRESS_EN = re.compile(
    r"(?<![\w#$.,/:-])(?P<number>\d{1,5}[A-Za-z]?)\s+"
    r"(?P<street>[A-Z][\w'’.-]{0,30}+(?:\s+[A-Z][\w'’.-]{0,30}+){0,3})\s+" + _STREET_EN + r"(?![\w])"
    r"(?P<units>" + _UNITS + r")")
# apto 42, apartamento 808 bloco A, Bloco 2, apartamento 103, Quadra 12, lote 5, casa 3; a lone
# "casa 31" after a comma or "na".
_UNIT_RUN = re.compile(r"(?<![\w.])(?=[^\W\d_])" + _UNIT + r"(?P<more>(?:\s*[,–—-]?\s*" + _UNIT + r"){0,4})")
_APARTMENT = re.compile(r"(?i:\bap(?:artamento|to|t)?\b|\bsuite\b|\bunit\b)")
_HOME_UNIT = re.compile(r"(?i:\bcasa\b|\blote\b|\bquadra\b|\bqd\b)")
_HOUSE_AFTER = re.compile(r"(?i:(?:,|\bna|\bminha|\bmy)\s*)$")

# Cue words: which side of the conversation an address belongs to (see the module docstring).
_STORE_WORDS = _words("""
loja lojas filial filiais unidade showroom distribuição distribuicao depósito deposito armazém armazem
galpão galpao retirada retirar retire locker matriz sede fábrica fabrica quiosque nossa nosso nossas
nossos store shop warehouse pickup pick outlet our cd
""")
_PERSON_WORDS = _words("""
endereço endereco casa apartamento apto moro mora moramos residência residencia resido reside entregar
entrega entregam entregue enviar envie enviem mandar manda mande mandem coleta coletar destinatário
destinatario destinatária destinataria cuidados live lives ship deliver send home address
""")
_CUE_REACH = 90
# Abbreviations whose dot does not end a sentence.
_ABBREVIATIONS = _words("sr sra srta dr dra mr mrs ms av r tv al rod pça pca eng prof profa gal cel sen dep "
                        "pres n nº no st ave rd ln blvd apto ap apt bl conj cj km trav estr lgo sl qd lt")
_SENTENCE_MARK = re.compile(r"[!?;\n]|\.(?=\s|$)")
_WORD = re.compile(r"[^\W\d_][\w'’-]{0,40}+")


class _Context:
    """What the context rules read from one text (sentence ends, cue words), each found once."""

    def __init__(self, text: str) -> None:
        self.text = text
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


_PRODUCT_NOUNS = _words("""
sofá sofa poltrona cadeira mesa cama colchão colchao luminária luminaria abajur quadro tapete cortina
estante armário armario rack painel banqueta puff travesseiro jogo kit linha coleção colecao modelo
marca produto item edição edicao livro camiseta camisa tênis tenis bolsa mochila vestido calça calca
boneca brinquedo farinha fermento café cafe vinho cerveja chá cha biscoito perfume shampoo sabonete
creme ar-condicionado ventilador aquecedor geladeira fogão fogao panela panelas taça taças caneca
capa case fone air conditioner brand line model product collection shirt book chair sofa
""")
_NEXT_WORD = re.compile(r"[ \t]+([^\W\d_][\w-]{0,40}+)")
_CAPITALISED = re.compile(r"[A-ZÀ-Þ][a-zß-ÿ]")
_WORD_CHARS = "'’./-_"


def _word_before(text: str, start: int) -> tuple[str, int] | None:
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


def _after_product_word(text: str, start: int, exempt: frozenset[str] = frozenset()) -> bool:
    """A product noun, or a capitalised word inside the sentence, right before `start`:
    "a Cadeira Dona Flor", "poltrona Seu Jorge", "o Sofá Avenida"."""
    before = _word_before(text, start)
    if before is None:
        return False
    word, at = before
    if word.lower() in _PRODUCT_NOUNS:
        return True
    return (_CAPITALISED.match(word) is not None and word.lower().rstrip(".") not in exempt
            and not _opens_sentence(text, at))


def _street_ok(street: str) -> bool:
    tokens = street.split()
    return not any(t.lower() in _STOP and t.lower() not in _CONNECTORS for t in tokens)


def _quantity_follows(text: str, end: int) -> bool:
    """"Sofá Avenida 3 lugares": a lowercase noun right after the number makes it a quantity."""
    word = _NEXT_WORD.match(text, end)
    return word is not None and word.group(1).islower() and word.group(1) not in _STOP


_PERSON_CUE_WORDS = _words("endereço endereco entrega entregar moro ship deliver address")


def _find_addresses(context: _Context) -> Iterator[Span]:
    text = context.text
    for match in _ADDRESS_PT.finditer(text):
        if not _street_ok(match.group("street")) or _after_product_word(text, match.start(), _PERSON_CUE_WORDS):
            continue
        if not match.group("units") and _quantity_follows(text, match.end("number")):
            continue
        yield match.start(), match.end(), not context.is_store_address(match.start(), match.end())
    for match in _ADDRESS_EN.finditer(text):
        if _street_ok(match.group("street")):
            yield match.start(), match.end(), not context.is_store_address(match.start(), match.end())
    for match in _UNIT_RUN.finditer(text):
        run = match.group()
        home = (_APARTMENT.search(run) or (match.group("more") and _HOME_UNIT.search(run))
                or (run[:4].lower() == "casa" and _HOUSE_AFTER.search(text, max(0, match.start() - 8), match.start())))
        if home:
            yield match.start(), match.end(), not context.is_store_address(match.start(), match.end())


# --- Names -------------------------------------------------------------------------------------

_HONORIFIC = (r"(?:(?:Sr|Sra|Srta|Dr|Dra|Mr|Mrs|Ms|Mx|Prof|Profa|sr|sra|srta|dr|dra)\.?|Dona|dona|Seu|seu|"
              r"Senhor|Senhora|senhor|senhora|Miss)(?![\w])")
_ROLE = (r"(?i:cliente|porteir[oa]|zelador[a]?|vizinh[oa]|s[íi]ndic[oa]|recepcionista|entregador[a]?|motorista|"
         r"motoboy|destinat[áa]ri[oa]|recebedor[a]?|titular|espos[oa]|marido|filh[oa]|m[ãa]e|pai|irm[ãa]o?|"
         r"av[óôo]|ti[oa]|prim[oa]|sogr[oa]|cunhad[oa]|namorad[oa]|"
         r"customer|neighbou?r|doorman|husband|wife|son|daughter|mother|father|brother|sister)")
# These take a name in any case ("meu nome é ana paula").
_SAYS_NAME = (r"(?i:meu\s+nome\s+(?:[ée]h?|:)|me\s+chamo|my\s+name\s+is|nome\s+completo\s*:?|"
              r"aos\s+cuidados\s+d[eoa]s?|a/c|c/o)")
# These take a capitalised name ("sou a Fernanda", "o nome é Marcelo Souza").
_BEFORE_NAME = (r"(?:(?i:sou\s+[oa]|aqui\s+[ée]\s+[oa]|falar\s+com(?:\s+[oa])?|quem\s+vai\s+receber\s+[ée](?:\s+[oa])?|"
                r"o\s+nome\s+[ée]|em\s+nome\s+d[eoa]|entregue\s+(?:ao|à|a|para)(?:\s+[oa])?|on\s+behalf\s+of|"
                r"signed\s+by|nome\s*:|name\s*:)|I'm|I\s+am)")
_NAME_TRIGGER = re.compile(
    r"(?<![\w./])(?=[^\W\d_])(?:(?P<says>" + _SAYS_NAME + r")|(?P<before>" + _BEFORE_NAME + r")|(?P<role>" + _ROLE + r")"
    r"|(?P<honorific>" + _HONORIFIC + r"))(?![\w/])")
_HONORIFIC_NEXT = re.compile(r"\s+" + _HONORIFIC)
_CAPWORD = r"[A-ZÀ-Þ](?:[a-zß-ÿ]+|['’][A-ZÀ-Þ][a-zß-ÿ]+)(?:-[A-ZÀ-Þ][a-zß-ÿ]+)?(?![\w'’])"
_CAP_NAME = re.compile(r"[ \t]+(" + _CAPWORD + r"(?:[ \t]+(?:(?:d[aeo]s?|di|del|du|van|von)[ \t]+)?" + _CAPWORD + r"){0,4})")
# A name stays on its line and holds no digit ("name: troca-em-30-dias" is a slug).
_ANY_TOKEN = re.compile(r"[ \t]*+([^\W\d_](?:[^\W\d_]|['’-]){0,30}+)(?![\w])")
# Capitalised words that are not names: a customer tier ("Cliente Premium") or a template noun
# ("Seu Pedido").
_NOT_NAMES = _words("""
premium vip ouro prata bronze gold silver platinum diamante black prime plus pro fidelidade novo nova
antigo antiga final corporativo especial master select club clube premier básico basico elite
sr sra srta dr dra mr mrs ms dona seu senhor senhora miss
correios loggi jadlog sequoia azul total express uber mercado livre magalu americanas shopee amazon
pedido produto cadastro carrinho frete cupom reembolso endereço endereco código codigo status número
numero cartão cartao pagamento boleto prazo equipe atendimento cliente conta compra entrega troca
""")
_SENTENCE_WORDS = _words("oi olá ola obrigado obrigada prezado prezada prezados caro cara dear hi hello thanks "
                         "bom boa sou aqui para com entregue quem falar")
_STREET_WORDS = _words("rua r. avenida av av. travessa tv. alameda al. rodovia rod. estrada praça pça. largo "
                       "viela beco ladeira servidão passagem")
_TITLE_GOES_ON = re.compile(r"\s+(?:e|and|&|of|the|com)\s+" + _CAPWORD + r"\s+" + _CAPWORD)
_PRODUCT_AFTER = re.compile(r"\s+(?:(?P<word>[^\W\d_][\w-]*)|\d+(?:[.,]\d+)?\s?(?i:ml|g|kg|mg|l|btus?|w|v|cm|mm|oz|lb)\b)")


def _name_after(text: str, at: int, any_case: bool) -> tuple[int, int] | None:
    """The span of the name that starts after `at`, if a name is there."""
    if any_case:
        tokens: list[re.Match] = []
        pending: list[re.Match] = []
        position = at
        while len(tokens) < 4:
            token = _ANY_TOKEN.match(text, position)
            if token is None:
                break
            word = token.group(1).lower()
            if word in _CONNECTORS and tokens:
                pending.append(token)
            elif word in _STOP or word in _NOT_NAMES:
                break
            else:
                tokens.extend(pending)
                pending = []
                tokens.append(token)
            position = token.end()
        return (tokens[0].start(1), tokens[-1].end(1)) if tokens else None
    name = _CAP_NAME.match(text, at)
    if name is None or name.group(1).split()[0].lower() in _NOT_NAMES:
        return None
    return name.start(1), name.end(1)


def _product_name(text: str, trigger_start: int, end: int) -> bool:
    """"Cadeira Dona Flor", "Sr. Frio ar-condicionado", "Mr. Músculo 500ml", "Dona Flor e Seus Dois Maridos"."""
    before = _word_before(text, trigger_start)
    if before is not None and before[0].lower() in _STREET_WORDS:
        return True
    if _after_product_word(text, trigger_start, _SENTENCE_WORDS):
        return True
    after = _PRODUCT_AFTER.match(text, end)
    if after is not None and (after.group("word") is None or after.group("word").lower() in _PRODUCT_NOUNS):
        return True
    return _TITLE_GOES_ON.match(text, end) is not None


def _find_names(context: _Context) -> Iterator[Span]:
    text = context.text
    for trigger in _NAME_TRIGGER.finditer(text):
        at = trigger.end()
        if not trigger.group("honorific"):
            honorific = _HONORIFIC_NEXT.match(text, at)
            at = honorific.end() if honorific else at
        any_case = trigger.group("says") is not None and at == trigger.end()
        span = _name_after(text, at, any_case)
        if span is None:
            continue
        if trigger.group("honorific") or trigger.group("role"):
            if _product_name(text, trigger.start(), span[1]):
                continue
        else:
            before = _word_before(text, trigger.start())
            if before is not None and before[0].lower() in _PRODUCT_NOUNS:  # "Product name: Cadeira..."
                continue
        yield span[0], span[1], True


# --- Detectors ---------------------------------------------------------------------------------


def _finder(pattern: re.Pattern, accept: Callable[[str], bool]) -> Callable[[_Context], Iterator[Span]]:
    def find(context: _Context) -> Iterator[Span]:
        for match in pattern.finditer(context.text):
            if accept(match.group(0)):
                yield match.start(), match.end(), True

    return find


def _phone_intl_ok(text: str) -> bool:
    return 8 <= len(_digits(text)) <= 15


def _find_phones(context: _Context) -> Iterator[Span]:
    text = context.text
    for match in _PHONE_BR.finditer(text):
        named = _IDENTIFIER_BEFORE.search(text, max(0, match.start() - 30), match.start())
        if named is None and not _TWO_YEARS.fullmatch(match.group()):
            yield match.start(), match.end(), True


def _find_rg(context: _Context) -> Iterator[Span]:
    text = context.text
    for match in _RG_STRONG.finditer(text):
        yield match.start(), match.end(), True
    for match in _RG_LOOSE.finditer(text):
        start, end = match.span()
        before = max(context.sentence_start(start), start - 40)
        after = min(context.sentence_end(end), end + 12)
        if (_RG_CUE.search(text, before, start) or _RG_STATE.search(text, max(0, start - 3), start)
                or _RG_CUE.search(text, end, after)):
            yield start, end, True


# Cheap pre-check: every number detector needs a run of at least seven digits and
# separators (e-mail needs an '@', IPv6 two colons). Most text fails all three.
_NUMERIC_HINT = re.compile(r"\d[\d .()/+-]{5,}\d")
_ALWAYS = "always"

# (kind, what the text must hold for the detector to run, detector)
_DETECTORS: tuple[tuple[str, str, Callable[[_Context], Iterator[Span]]], ...] = (
    ("email", "at", _finder(_EMAIL, lambda s: True)),
    ("card", "digits", _finder(_CARD, lambda s: 13 <= len(_digits(s)) <= 19 and _luhn(_digits(s)))),
    ("cnpj", "digits", _finder(_CNPJ, lambda s: _cnpj_ok(_digits(s)))),
    ("cpf", "digits", _finder(_CPF, lambda s: _cpf_ok(_digits(s)))),
    ("ip", "digits", _finder(_IPV4, _ip_ok)),
    ("ip", "colons", _finder(_IPV6, _ip_ok)),
    ("phone", "digits", _finder(_PHONE_INTL, _phone_intl_ok)),
    ("rg", "digits", _find_rg),
    ("phone", "digits", _find_phones),
    ("phone", "digits", _finder(_PHONE_BR_PLAIN, lambda s: True)),
    ("address", _ALWAYS, _find_addresses),
    ("name", _ALWAYS, _find_names),
)


def find(text: str) -> list[Finding]:
    """Every PII finding in `text`, in order, never overlapping."""
    holds = {"at": "@" in text, "colons": text.count(":") >= 2, "digits": _NUMERIC_HINT.search(text) is not None,
             _ALWAYS: True}
    context = _Context(text)
    # Occupied spans, disjoint and sorted by start, so an overlap check is one bisection.
    starts: list[int] = []
    spans: list[tuple[int, int, str | None]] = []
    for kind, needs, detector in _DETECTORS:
        if not holds[needs]:
            continue
        for start, end, redact_it in detector(context):
            at = bisect.bisect_left(starts, start)
            if (at < len(spans) and spans[at][0] < end) or (at and spans[at - 1][1] > start):
                continue
            starts.insert(at, start)
            spans.insert(at, (start, end, kind if redact_it else None))
    return [Finding(kind, start, end) for start, end, kind in spans if kind is not None]


def redact(text: str, *, placeholder: Callable[[str], str] = lambda kind: f"[{kind}]") -> Redaction:
    """`text` with each finding replaced by a typed placeholder, and the count of each kind."""
    findings = find(text)
    if not findings:
        return Redaction(text)
    out, last = [], 0
    for finding in findings:
        out.append(text[last:finding.start])
        out.append(placeholder(finding.kind))
        last = finding.end
    out.append(text[last:])
    return Redaction("".join(out), Counter(f.kind for f in findings))
