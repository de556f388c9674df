"""A text's words as the index reads them: folded (case, accents), split, stopwords and filler
dropped, brought to the singular and stemmed (Snowball Portuguese, then English), English store
words read through the glossary, and chat shorthand (what a message may write)."""

from __future__ import annotations

import re
import unicodedata
from typing import Optional

import snowballstemmer

WORD = re.compile(r"[^\W_]+", re.UNICODE)

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
if them him her his hers us another am being having doing whom nor so very too only same such both few
again once while until because before after during between through against all up out over
don doesn didn isn aren wasn weren won wouldn couldn shouldn haven hasn ll ve
live lives living long take takes get gets got here much many still already now soon yet go going
moro mora morar tempo quero queria gostaria preciso precisa fica faz fazer sou agora acho achei saber
ajuda ajudar demais coisa gente alguém alguem ta tá pra né ne aí ai
mim ti si comigo contigo dar dá da dou deu der dei daria
tenho temos tive teve tinha tivemos estamos estive esteve fui foram seria seja sejam há havia houve vão
cadê cade fiz fez faço depois antes ontem amanhã amanha hoje sempre nunca nada todo toda todos todas assim ali cá
quem nem dele dela deles delas desse dessa desses dessas deste desta nesse nessa neste nesta naquele naquela
outros outras ir indo vem vêm vejo ver sabem sabia sabiam fazem fazendo fico ficou
funciona funcionam funcionaria custa custam
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
# English support words every store uses, read as the Portuguese word concepts use, so
# "installments" meets "parcela" and "hours" meets "horário" (applied to concepts and messages
# alike). What one kind of store sells (furniture, sofa, mattress…) is its own vocabulary's.
GLOSSARY = {
    "installment": "parcela", "installments": "parcela", "interest": "juros", "card": "cartão",
    "credit": "crédito", "payment": "pagamento", "pay": "pagar", "paid": "pago", "discount": "desconto",
    "coupon": "cupom", "shipping": "frete", "freight": "frete", "delivery": "entrega", "deliver": "entregar",
    "arrive": "chegar", "arrives": "chegar", "order": "pedido", "orders": "pedido", "tracking": "rastreio",
    "refund": "reembolso", "return": "devolução", "exchange": "troca", "warranty": "garantia",
    "guarantee": "garantia", "store": "loja", "shop": "loja", "pickup": "retirada", "password": "senha",
    "account": "conta", "invoice": "nota", "cancel": "cancelar", "address": "endereço", "hours": "horário",
    "service": "atendimento", "free": "grátis", "damaged": "avariado", "broken": "avariado", "gift": "presente",
    "days": "dias", "day": "dias", "express": "expresso", "voucher": "vale-presente", "stock": "estoque",
    "arrived": "chegar", "wrong": "errado", "product": "produto", "products": "produto", "saturday": "sábado",
    "saturdays": "sábado", "sunday": "domingo", "sundays": "domingo", "weekend": "sábado", "company": "empresa",
    "receipt": "nota", "cards": "cartão", "nights": "noites", "deadline": "prazo", "available": "disponível",
    "north": "norte", "northeast": "nordeste", "south": "sul", "southeast": "sudeste", "brand": "marca",
    "cancellation": "cancelamento", "refunds": "reembolso", "returns": "devolução", "notify": "avise",
    "ship": "entregar", "ships": "entregar", "size": "tamanho", "sizes": "tamanho", "defect": "defeito",
    "defective": "defeito", "faulty": "defeito", "buy": "comprar", "bought": "comprei", "purchase": "compra",
    "purchased": "comprei", "price": "preço", "prices": "preço", "week": "semana", "weeks": "semana",
    "month": "mês", "months": "mês", "year": "ano", "years": "ano", "replacement": "troca", "replace": "trocar",
    "receive": "receber", "received": "recebi",
}
# Chat shorthand, read as the word it stands for before phrases are matched ("sai hj" is "sai hoje").
SHORTHAND = {"q": "que", "hj": "hoje", "qto": "quanto", "qta": "quanta", "qdo": "quando", "qnd": "quando",
             "qndo": "quando", "msm": "mesmo", "pq": "porque", "tb": "também", "tbm": "também", "td": "tudo",
             "vc": "você", "vcs": "vocês", "nd": "nada", "ngm": "ninguém", "cmg": "comigo", "p": "para",
             "dps": "depois", "naum": "não"}

# A question is asked in words that say nothing of its subject ("como funciona", "quanto custa",
# "quem", "nem", "desse"): stopwords above. Weekdays are names, not inflections: kept whole, so
# "vocês sabem" never meets "sábado" (the stemmer reads both as "sab") nor "quarto" "quarta".
_WHOLE = frozenset({"segunda", "terca", "quarta", "quinta", "sexta", "sabado", "domingo"})
# English words read through the glossary in any inflection only in English text: "Shopping
# Mueller" is a Brazilian mall, not English "shop" (loja); the glossary's own words hold anywhere.
ENGLISH = frozenset({"the", "is", "are", "my", "you", "your", "what", "how", "it", "and", "with", "this", "that",
                     "of", "i", "can", "does", "don", "doesn", "will"})

_PT = snowballstemmer.stemmer("portuguese")
_EN = snowballstemmer.stemmer("english")
# Any other inflection of the glossary's English words (wrapped, refunded, delivering), by English stem.
_GLOSSARY_STEMS = {_EN.stemWord(word): pt for word, pt in GLOSSARY.items()}
_STEMS: dict[str, tuple[str, str]] = {}
WORDS: dict[str, Optional[tuple[str, str]]] = {}  # read_word's memo for English text
WORDS_PT: dict[str, tuple[str, str] | None] = {}  # and for the rest
LETTERS = re.compile(r"[^\W\d_]+", re.UNICODE)
DIGIT = re.compile(r"\d")
_FOLD: dict[str, str] = {}
_PLURAL = (("oes", "ao"), ("aes", "ao"), ("ais", "al"), ("eis", "el"), ("ois", "ol"), ("ns", "m"),
           ("res", "r"), ("zes", "z"), ("les", "l"))


def fold(word: str) -> str:
    folded = _FOLD.get(word)
    if folded is None:
        folded = "".join(c for c in unicodedata.normalize("NFKD", word) if not unicodedata.combining(c))
        if len(_FOLD) < 200_000:
            _FOLD[word] = folded
    return folded


# Typed with or without accents ("obrigadao", "ate").
_SKIP = frozenset(STOPWORDS | FILLER | {fold(word) for word in STOPWORDS | FILLER})


def singular(folded: str) -> str:
    """A folded word brought to the singular (móveis → movel, cartões → cartao, frete → frete)."""
    if len(folded) < 4 or not folded.endswith("s"):
        return folded
    for plural, single in _PLURAL:
        if folded.endswith(plural) and len(folded) > len(plural) + 2:
            return folded[: -len(plural)] + single
    return folded if folded.endswith(("ss", "us", "is")) else folded[:-1]


def term_and_form(word: str) -> tuple[str, str]:
    """(index term, singular form) of one lowercase word, memoised: stemming is the slow part."""
    found = _STEMS.get(word)
    if found is None:
        single = singular(fold(word))
        found = (single, single) if single in _WHOLE else (_EN.stemWord(_PT.stemWord(single)), single)
        if len(_STEMS) < 200_000:
            _STEMS[word] = found
    return found


def glossed(word: str, english: bool = True) -> str:
    """The Portuguese word concepts use for an English store word (in any inflection when the
    text is `english`), else the word."""
    found = GLOSSARY.get(word)
    if found is None and english and word.isascii():
        found = _GLOSSARY_STEMS.get(_EN.stemWord(word))
    return found or word


def read_word(word: str, english: bool = True) -> Optional[tuple[str, str]]:
    """(index term, singular form) of a lowercase word, or None for a stopword or filler; `english`:
    the text is English (see ENGLISH)."""
    memo = WORDS if english else WORDS_PT
    found = memo.get(word, False)
    if found is False:
        found = None if word in _SKIP or fold(word) in _SKIP or _PT.stemWord(word) in FILLER_STEMS \
            else term_and_form(glossed(word, english))
        if len(memo) < 200_000:
            memo[word] = found
    return found


def is_english(words: list[str]) -> bool:
    """Whether a text's lowercase words are English (any of its function words)."""
    return not ENGLISH.isdisjoint(words)


def stem(word: str) -> str:
    """The index term for one lowercase word."""
    return term_and_form(word)[0]


def raw_forms(text: str) -> list[tuple[str, str]]:
    """(index term, singular form) of every word and number of a text, stopwords and filler
    included (for reading phrases: "não chegou" is not "chegou")."""
    return [term_and_form(word) for word in WORD.findall(text.lower())]


def plain_words(text: str) -> set[str]:
    """The baseline's view of a text: lowercase words, nothing else."""
    return set(WORD.findall(text.lower()))


def proper_names(text: str) -> set[str]:
    """Folded singular forms of the words written with a capital in mid-sentence ("a Marcela
    comprou"): names, never read as a typo of a store word (Marcela is not parcela)."""
    found = set()
    for match in LETTERS.finditer(text):
        word = match.group()
        if word[0].isupper() and not word.isupper():
            at = match.start() - 1  # the last character before the word that is not a space, read in place
            while at >= 0 and text[at].isspace():
                at -= 1
            if at >= 0 and text[at] not in ".!?:\n":
                found.add(term_and_form(word.lower())[1])
    return found
