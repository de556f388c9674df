"""The PII detector of a person's name: after an honorific, a role or "meu nome é" (any case), unless it is a
product named like a person."""

from __future__ import annotations

import re
from typing import Iterator

from shared.pii.bare_names import fold, surnames
from shared.pii.context import CONNECTORS, PRODUCT_NOUNS, STOP, Context, Span, after_product_word, word_before, words

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
_NOT_NAMES = words("""
premium vip ouro prata bronze gold silver platinum diamante black prime plus pro fidelidade novo nova
antigo antiga final corporativo especial master select club clube premier básico basico elite
sr sra srta dr dra mr mrs ms dona seu senhor senhora miss
correios loggi jadlog sequoia azul total express uber mercado livre magalu americanas shopee amazon
pedido produto cadastro carrinho frete cupom reembolso endereço endereco código codigo status número
numero cartão cartao pagamento boleto prazo equipe atendimento cliente conta compra entrega troca
""")
_SENTENCE_WORDS = words("oi olá ola obrigado obrigada prezado prezada prezados caro cara dear hi hello thanks "
                        "bom boa sou aqui para com entregue quem falar")
_STREET_WORDS = words("rua r. avenida av av. travessa tv. alameda al. rodovia rod. estrada praça pça. largo "
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
            if word in CONNECTORS and tokens:
                pending.append(token)
            elif word in STOP or word in _NOT_NAMES:
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


_CONNECTOR_RUN = re.compile(r"[ \t]+(?:d[aeo]s?|di|del|du|van|von)[ \t]+")


def _through_surnames(text: str, start: int, end: int) -> int:
    """Where a name ends: a connector ("da", "do"...) goes on only to a known surname ("Maria da Silva"),
    never to what follows a person ("Letícia do Pão de Açúcar")."""
    if " d" not in text[start:end] and " v" not in text[start:end]:
        return end
    at = start
    for connector in _CONNECTOR_RUN.finditer(text, start, end):
        following = re.match(r"[^\W\d_]+", text[connector.end():end])
        if following is None or fold(following.group()) not in surnames():
            return connector.start() if connector.start() > at else end
    return end


def _product_name(text: str, trigger_start: int, end: int) -> bool:
    """"Cadeira Dona Flor", "Sr. Frio ar-condicionado", "Mr. Músculo 500ml", "Dona Flor e Seus Dois Maridos"."""
    before = word_before(text, trigger_start)
    if before is not None and before[0].lower() in _STREET_WORDS:
        return True
    if after_product_word(text, trigger_start, _SENTENCE_WORDS):
        return True
    after = _PRODUCT_AFTER.match(text, end)
    if after is not None and (after.group("word") is None or after.group("word").lower() in PRODUCT_NOUNS):
        return True
    return _TITLE_GOES_ON.match(text, end) is not None


def find_names(context: Context) -> Iterator[Span]:
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
                # Reserved as a product's name, so the bare-name detector never reads "Rosa" in it.
                yield trigger.start(), span[1], False
                continue
        else:
            before = word_before(text, trigger.start())
            if before is not None and before[0].lower() in PRODUCT_NOUNS:  # "Product name: Cadeira..."
                continue
        yield span[0], _through_surnames(text, span[0], span[1]), True
