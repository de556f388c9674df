"""The PII detector of a person's address: a street address or a home unit, unless a cue names the store's side or
it is a product named like a street."""

from __future__ import annotations

import re
from typing import Iterator

from shared.pii.context import CONNECTORS, STOP, Context, Span, after_product_word, words

# --- Addresses ---------------------------------------------------------------------------------

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
_NEXT_WORD = re.compile(r"[ \t]+([^\W\d_][\w-]{0,40}+)")


def _street_ok(street: str) -> bool:
    tokens = street.split()
    return not any(t.lower() in STOP and t.lower() not in CONNECTORS for t in tokens)


def _quantity_follows(text: str, end: int) -> bool:
    """"Sofá Avenida 3 lugares": a lowercase noun right after the number makes it a quantity."""
    word = _NEXT_WORD.match(text, end)
    return word is not None and word.group(1).islower() and word.group(1) not in STOP


_PERSON_CUE_WORDS = words("endereço endereco entrega entregar moro ship deliver address")


def find_addresses(context: Context) -> Iterator[Span]:
    text = context.text
    for match in _ADDRESS_PT.finditer(text):
        if not _street_ok(match.group("street")) or after_product_word(text, match.start(), _PERSON_CUE_WORDS):
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
