"""What customers write, read in the words stores write: the support vocabulary and the map of
Brazil that retrieval adds to a message before it searches (never to a concept, so the index and
its snapshots do not depend on this table).

A customer asks "cadê minha encomenda?", "vcs montam?", "quando o dinheiro volta?", "moro em
Fortaleza"; a store writes "atraso", "montagem", "reembolso", "Nordeste". Each entry below is
one such reading: what a customer may write (words or phrases, compared by stem when the stem
is long, else folded and in the singular: see `key`) and what a store would have written
instead; chat shorthand (q, hj, qto) is read first. The added words weigh EXPANDED of what the
customer's own word would, so a concept that says the customer's words still ranks first.

Places are read apart: a city or state adds its state and region, and a concept that shares
only places with a message (a city, "capitais", a street) is no answer to it ("qual a população
de Recife?"); retrieval's floor asks for one word that is not a place (see search.Index.relevant).

Written from general knowledge of Brazilian e-commerce support, not from any labelled message
set's held-out part.
"""

from __future__ import annotations

import re
from typing import Callable, NamedTuple, Optional

# What a customer writes | what a store writes. "|" separates alternatives; words of a phrase
# must follow each other in the message (stopwords included: "não chegou" is not "chegou").
RELATED: tuple[tuple[str, str], ...] = (
    # Where is my order, it is late.
    ("não chegou|nao chegou|não chegaram|nada de chegar|não recebi o pedido|não recebi meu pedido|"
     "não recebi a encomenda|não recebi minha encomenda|não recebi o produto|não recebi minha compra|"
     "não recebi nada|nao recebi o pedido|nao recebi meu pedido|nao recebi nada|ainda não veio|não veio|nao veio|"
     "atrasou|atrasada|atrasadas|atrasados|pedido sumiu|encomenda sumiu|extraviado|extraviou|perdido|"
     "perderam|nunca chegou|"
     "late|delayed|never arrived|not arrived|still waiting|not received", "atraso pedido atrasado"),
    ("cadê|cade|onde está|onde esta|onde tá|onde ta|onde anda|por onde anda|where is|status|localizar|acompanhar|"
     "rastrear|tracking|track", "rastreio pedido"),
    ("hasn't moved|has not moved|not moving|no update|no updates|supposed to arrive|should have arrived|"
     "era pra ter chegado|era para ter chegado|deveria ter chegado|já era pra chegar", "atraso rastreio atualiza"),
    ("parado|parada|não atualiza|nao atualiza|não anda|nao anda|não se mexe|sem atualização|sem atualizacao|"
     "sem movimentação|sem movimentacao|travado|travada|stuck", "rastreio atualiza atraso"),
    ("encomenda|encomendas|compra que fiz|minha compra|package|parcel", "pedido"),
    ("quanto tempo|quantos dias|demora|demorar|demoram|leva quanto|quando chega|quando vai chegar|"
     "how long|how many days|when will", "prazo entrega"),
    ("mais rápido|mais rapido|rapidinho|expressa|sedex|amanhã mesmo|chegar amanhã|faster|"
     "fastest|quickly|rush", "envio expresso"),
    ("sai hoje|sair hoje|envia hoje|enviam hoje|mandam hoje|despachar|despacham|postar|postam|posta|"
     "ship today|same day|dispatch", "despacho mesmo dia"),
    ("agendar|agendo|marcar dia|marcar a entrega|combinar|escolher o dia|dia certo|horário da entrega|"
     "schedule", "agendamento entrega agendada"),
    # Money back, cancel, return.
    ("cai o dinheiro|cai meu dinheiro|dinheiro cai|cair o dinheiro|dinheiro de volta|dinheiro volta|"
     "dinheiro voltar|devolver o dinheiro|devolvem o dinheiro|devolução do valor|"
     "ressarcimento|ressarcir|reembolsar|estornar|estornam|money back|refunded", "reembolso estorno"),
    ("desistir|desisti|desistência|desistencia|não quero mais|nao quero mais|cancela|cancelo|"
     "cancel|cancelled|canceled", "cancelamento cancelar pedido"),
    ("devolver|devolvo|devolvi|devolvido|devolvida|mandei de volta|enviei de volta|mandar de volta|"
     "send back|send it back|give back|give it back|return it", "devolução"),
    ("me arrependi|arrependimento|não gostei|nao gostei|não serviu|nao serviu|não ficou bom|tamanho errado|"
     "cor errada|changed my mind", "troca devolução"),
    ("quebrado|quebrada|quebrou|amassado|amassada|riscado|riscada|rasgado|rasgada|trincado|trincada|"
     "danificado|danificada|estragado|estragada|veio com defeito|chegou com defeito|arranhado|arranhada|"
     "damaged|broken|dented|scratched", "avariado danificado defeito"),
    ("parou de funcionar|descolou|descolando|soltou|soltando|bambo|bamba|rachou|com defeito|stopped working",
     "defeito garantia"),
    # Paying.
    ("negado|negada|negou|não passa|nao passa|não passou|nao passou|não aprova|não aprovou|nao aprovou|"
     "não autoriza|declined|denied|rejected", "recusado recusa cartão"),
    ("dividir|dividido|parcelado|parcelada|parcelar|parcelo|vezes sem juros|split", "parcelamento parcela"),
    ("à vista|a vista|avista|upfront", "pagamento à vista pix desconto"),
    ("mais barato|mais barata|barato|abatimento|cheaper", "desconto"),
    ("prestação|prestações|prestacao|prestacoes|parcelas", "parcelamento parcela"),
    ("código de desconto|codigo de desconto|cupom de desconto|promo code|discount code|voucher code", "cupom"),
    ("dois cartões|2 cartões|dois cartoes|2 cartoes|outro cartão|two cards", "dois cartões"),
    ("boas vindas|boas-vindas|bem vindo|bem-vindo|primeira vez|primeiro pedido|primeira compra|"
     "welcome|first order|first purchase", "primeira compra cupom"),
    ("juntos|juntas|ao mesmo tempo|together|acumular|acumula|acumulam|acumulativo|dois cupons|2 cupons|"
     "mais de um cupom|combinar cupons|juntar cupons|"
     "somar cupons|stack", "cumulativo cupons"),
    ("cupom fiscal|nf|nfe|nf-e|danfe|recibo|receipt", "nota fiscal"),
    ("minha empresa|pessoa jurídica|pessoa juridica|pj", "cnpj empresa"),
    ("rastreamento|código de rastreio|codigo de rastreio|código de rastreamento|codigo de rastreamento",
     "rastreio"),
    ("muito tempo|demora muito|demorado|demorada|muito demorado|prazo longo|muito longo|too long|takes forever",
     "prazo longo"),
    ("avisam antes|ligam antes|vão ligar|vao ligar|combinar horário|horário de entrega|horario de entrega|"
     "dia da entrega|data da entrega|data de entrega", "agendamento entrega agendada"),
    # Shipping costs.
    ("de graça|de graca|gratuito|gratuita|isenção|isencao|isento|sem pagar|não pagar|nao pagar|não pago|nao pago|"
     "não pagaria|nao pagaria", "grátis"),
    ("pagar a entrega|pago a entrega|pagar pela entrega|pagar o frete|pago o frete|pagar frete|pagar o envio|"
     "pagar pelo envio|pagar envio|receber em casa|entregar em casa", "frete entrega"),
    ("ficar pronto|fica pronto|ficar pronta|fica pronta|fabricar|fabricação|fabricacao|fabricado|fabricada|"
     "produzir|produzido|produzida|feito sob encomenda|made to order", "produção produzidos"),
    ("vale até|vale ate|válido até|valido ate|validade|expira|expirar|vencer|vencido|vencida|expire|expires",
     "vence vencimento validade"),
    ("absurdo|salgado|caríssimo|carissimo|pricey|expensive", "caro"),
    ("taxa de entrega|valor da entrega|custo da entrega|custo do envio|preço do envio|entrega grátis|"
     "entrega gratis|sem custo de entrega|shipping cost", "frete"),
    # Services.
    ("montar|montam|monta|monto|montado|montador|montadores|instalar|instalação|instalam|assemble|assembled",
     "montagem"),
    ("buscar|busco|buscaria|retirar|retiro|pegar na loja|pego na loja|pegar aí|pegar ai|pick up|collect",
     "retirada loja"),
    ("endereço da loja|endereco da loja|onde fica a loja|onde fica loja|pessoalmente|ver de perto|where is the store",
     "loja física"),
    ("showroom|loja física|loja fisica|ponto físico|loja de rua|lojas físicas|loja pra visitar|physical|"
     "in person|visit", "loja física"),
    ("abre|abrem|fecha|fecham|expediente|até que horas|ate que horas|que horas abre|que horas fecha|"
     "que horas vocês|que horas voces|what time|open|opens|close|closes",
     "horário aberto atendimento"),
    ("esgotado|esgotou|acabou|indisponível|indisponivel|sem estoque|fora de estoque|repor|reposição|"
     "reposicao|voltar ao estoque|volta ao estoque|out of stock|sold out|back in stock|restock",
     "esgotado estoque avise"),
    ("login|logar|entrar na conta|entrar no site|acessar minha conta|acessar a conta|não consigo entrar|"
     "nao consigo entrar|log in|sign in", "senha recuperar conta"),
    ("trocar o endereço|trocar o endereco|trocar endereço|mudar o endereço|mudar o endereco|mudar endereço|"
     "corrigir o endereço|corrigir o endereco|endereço errado|endereco errado|número da casa|numero da casa|"
     "número do prédio|apartamento|apto|complemento|rua errada|cep errado|"
     "me mudei|mudei de casa|mudança de endereço|wrong address|change the address", "endereço alterar"),
    ("fora do brasil|fora do país|fora do pais|exterior|outro país|outro pais|portugal|argentina|estados unidos|"
     "eua|europa|abroad|overseas|internacional|another country", "internacional international outside"),
    ("embrulhar|embrulho|papel de presente|embalagem de presente|pra presentear|para presentear|presentear|"
     "gift", "presente embrulho wrapping"),
    ("cartão presente|cartão-presente|gift card|giftcard|vale compra|vale-compra|vale compras", "vale-presente"),
    ("lavar|lavo|limpar|limpo|limpeza|mancha|manchou|sujou|sujo|suja|máquina de lavar|wash|clean|stain",
     "lavagem lavada"),
    ("personalizado|personalizada|tamanho especial|medida especial|sob encomenda|custom|custom-made|made to measure",
     "sob medida"),
)

# Cities and states, each with what it adds: its state (for a city) and its region. Names that
# are also common words (Natal, Vitória, Salvador, Santos…) are read as places only after "em",
# "de", "pra"… (AMBIGUOUS).
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
CAPITALS = frozenset("""Rio Branco|Macapá|Manaus|Belém|Porto Velho|Boa Vista|Palmas|Maceió|Salvador|Fortaleza|
São Luís|João Pessoa|Recife|Teresina|Natal|Aracaju|Vitória|Belo Horizonte|BH|Rio de Janeiro|Rio|São Paulo|Sampa|
Curitiba|Porto Alegre|Florianópolis|Floripa|Brasília|Goiânia|Cuiabá|Campo Grande""".replace("\n", "").split("|"))
AMBIGUOUS = frozenset("Natal|Vitória|Salvador|Santos|Palmas|Serra|Contagem|Boa Vista|Campo Grande|Rio Branco|"
                      "Imperatriz|Canoas|Pelotas|Sampa|Floripa|BH|Betim|Belém|Rio|PR|SC".split("|"))
_BEFORE_PLACE = frozenset("em de pra para no na do da a from in to".split())
# Words that name a place in any text; a word after a street word is a street's name.
PLACE_WORDS = "capital capitais cidade cidades estado estados região regiões bairro bairros interior " \
              "litoral rua avenida alameda travessa praça city state region street downtown"
STREET_WORDS = frozenset("rua avenida av alameda travessa praça street avenue".split())
EXPANDED = 0.7
EXPANDED_KNOWN = 0.5


# Chat shorthand, read as the word it stands for before phrases are matched ("sai hj" is "sai hoje").
SHORTHAND = {"q": "que", "hj": "hoje", "qto": "quanto", "qta": "quanta", "qdo": "quando", "qnd": "quando",
             "qndo": "quando", "msm": "mesmo", "pq": "porque", "tb": "também", "tbm": "também", "td": "tudo",
             "vc": "você", "vcs": "vocês", "nd": "nada", "ngm": "ninguém", "cmg": "comigo", "p": "para",
             "dps": "depois", "naum": "não"}


def key(term: str, form: str) -> str:
    """How a word is compared: by stem when the stem is long enough to say one thing (atrasou,
    atrasado), else by its exact singular form ("para" is not "parado", "pago" not "pagar")."""
    return term if len(term) >= 5 else "=" + form


class Entry(NamedTuple):
    """One reading: the words a customer writes (folded, singular), in order; the words it adds;
    whether they are places, and whether the first word must follow a preposition to count."""

    words: tuple[str, ...]
    adds: str
    place: bool
    after_preposition: bool


def entries() -> list[Entry]:
    """Every reading, the support vocabulary first, then the places."""
    def words(text: str) -> tuple[str, ...]:
        return tuple(_ALNUM.findall(text.lower()))

    found = []
    for said, adds in RELATED:
        for alternative in said.split("|"):
            found.append(Entry(words(alternative), adds, False, False))
    for region, states in _REGIONS.items():
        for group in states.split(";"):
            names = [name.strip() for name in group.split("|")]
            state = names[0]
            for name in names:
                adds = f"{region} {state}" + (" capital" if name in CAPITALS else "")
                found.append(Entry(words(name), adds, True, name in AMBIGUOUS))
    for name in ABROAD.split("|"):
        found.append(Entry(words(name), "internacional international exterior", True, False))
    return [entry for entry in found if entry.words]


_ALNUM = re.compile(r"[^\W_]+", re.UNICODE)


class Reading(NamedTuple):
    """What the lexicon adds to one message: index terms with their singular forms and weights,
    and the message's own terms that name a place."""

    added: list[tuple[str, str, float]]
    places: set[str]


class _Word(NamedTuple):
    term: str  # the index term
    key: str  # how phrases compare it (see `key`)
    bucket: str  # where readings starting with it are kept: its first four letters, folded, singular


class Lexicon:
    """The readings, kept by the first letters of their first word; a reading's words are stemmed
    only when a message first has a word in its bucket (stemming all of them costs a cold
    container a quarter of a second)."""

    def __init__(self) -> None:
        from .search import _fold, _forms, analyze, raw_forms, singular

        self._fold, self._singular, self._forms, self._analyze = _fold, singular, _forms, analyze
        self._entries = entries()
        self._buckets: dict[str, list[int]] = {}
        for at, entry in enumerate(self._entries):
            self._buckets.setdefault(self._bucket(entry.words[0]), []).append(at)
        for ats in self._buckets.values():
            ats.sort(key=lambda at: -len(self._entries[at].words))  # the longest phrase first
        self._keys: dict[int, tuple[str, ...]] = {}
        self._adds: dict[str, list[tuple[str, str]]] = {}
        self._words: dict[str, _Word] = {}
        # Index terms that are places wherever they are written (a region, "capital", "rua"); a
        # city's or state's own words ("grande", "santo") are places only where the whole name is.
        self.place_terms: set[str] = {term for word in PLACE_WORDS.split() + list(_REGIONS)
                                      for term, form in raw_forms(word) if form != "centro"}
        self._street = {self._word(word).key for word in STREET_WORDS}
        self._prepositions = {self._word(word).key for word in _BEFORE_PLACE}

    def _bucket(self, word: str) -> str:
        return self._singular(self._fold(word))[:4]

    def _word(self, word: str) -> _Word:
        """One lowercase word of a message, shorthand read, memoised."""
        found = self._words.get(word)
        if found is None:
            said = SHORTHAND.get(word, word)
            term, form = self._forms(said)
            found = _Word(term, key(term, form), self._bucket(said))
            if len(self._words) < 100_000:
                self._words[word] = found
        return found

    def _entry(self, at: int) -> tuple[tuple[str, ...], list[tuple[str, str]]]:
        """A reading's compared words and what it adds, worked out on its first use."""
        keys = self._keys.get(at)
        entry = self._entries[at]
        if keys is None:
            keys = self._keys[at] = tuple(self._word(word).key for word in entry.words)
        adds = self._adds.get(entry.adds)
        if adds is None:
            adds = self._adds[entry.adds] = self._analyze(entry.adds).words
        return keys, adds

    def read(self, text: str, known: Callable[[str], bool] = lambda term: False) -> Reading:
        """What the lexicon adds to a message. `known(term)`: whether the agent's own concepts use
        the word; a reading whose words they all use weighs EXPANDED_KNOWN, not EXPANDED (the store
        wrote them: "estorno" must not rank "reembolso" first), except a place's."""
        found = [self._word(word) for word in _ALNUM.findall(text.lower())]
        words = [word.key for word in found]
        buckets = self._buckets
        added: list[tuple[str, str, float]] = []
        places: set[str] = set()
        n = len(words)
        # Phrases may overlap: "não pago a entrega" is "não pago" and "pago a entrega".
        for i in [i for i, word in enumerate(found) if word.bucket in buckets or word.key in self._street]:
            matched = False
            for at in buckets.get(found[i].bucket, ()):
                said, adds = self._entry(at)
                entry = self._entries[at]
                if said[0] != words[i] or tuple(words[i:i + len(said)]) != said:
                    continue
                if entry.after_preposition and (i == 0 or words[i - 1] not in self._prepositions):
                    continue
                place = entry.place
                weight = EXPANDED_KNOWN if not place and all(known(word.term) for word in found[i:i + len(said)]) \
                    else EXPANDED
                added.extend((term, form, weight) for term, form in adds)
                if place:
                    places.update(term for term, _ in adds)
                    places.update(word.term for word in found[i:i + len(said)])
                matched = True
                break
            if not matched and words[i] in self._street and i + 1 < n:
                places.add(found[i + 1].term)
        return Reading(added, places)


_LEXICON: Optional[Lexicon] = None


def lexicon() -> Lexicon:
    """The lexicon, built on first use (kept off import)."""
    global _LEXICON
    if _LEXICON is None:
        _LEXICON = Lexicon()
    return _LEXICON
