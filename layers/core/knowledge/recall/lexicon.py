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

from typing import Callable, NamedTuple, Optional

from knowledge.recall.analysis import analyze
from knowledge.recall.words import SHORTHAND, WORD, fold, raw_forms, singular, term_and_form

# What a customer writes | what a store writes. "|" separates alternatives; words of a phrase
# must follow each other in the message (stopwords included: "não chegou" is not "chegou").
RELATED: tuple[tuple[str, str], ...] = (
    # Where is my order, it is late.
    ("não chegou|nao chegou|não chegaram|nada de chegar|não recebi o pedido|não recebi meu pedido|"
     "não recebi a encomenda|não recebi minha encomenda|não recebi o produto|não recebi minha compra|"
     "não recebi nada|nao recebi o pedido|nao recebi meu pedido|nao recebi nada|ainda não veio|não veio|nao veio|"
     "pedido atrasou|entrega atrasou|encomenda atrasou|atrasada|atrasadas|atrasados|pedido sumiu|"
     "encomenda sumiu|extraviado|extraviada|extraviou|pedido perdido|encomenda perdida|perderam meu pedido|"
     "perderam minha encomenda|nunca chegou|order is late|is running late|late delivery|late order|delayed|"
     "never arrived|not arrived|still waiting|not received", "atraso pedido atrasado"),
    ("cadê|cade|onde está|onde esta|onde tá|onde ta|onde anda|por onde anda|where is my|status do pedido|"
     "status da entrega|status do meu pedido|localizar|acompanhar|rastrear|tracking|track my", "rastreio pedido"),
    ("hasn't moved|has not moved|not moving|no update|no updates|supposed to arrive|should have arrived|"
     "era pra ter chegado|era para ter chegado|deveria ter chegado|já era pra chegar", "atraso rastreio atualiza"),
    ("parado|parada|não atualiza|nao atualiza|não anda|nao anda|não se mexe|sem atualização|sem atualizacao|"
     "sem movimentação|sem movimentacao|travado|travada|stuck", "rastreio atualiza atraso"),
    ("encomenda|encomendas|compra que fiz|minha compra|package", "pedido"),
    ("prazo|prazos", "entrega"),
    ("quanto tempo|quantos dias|demora|demorar|demoram|leva quanto|quando chega|quando vai chegar|"
     "how long|how many days|when will", "prazo entrega"),
    ("mais rápido|mais rapido|rapidinho|expressa|sedex|amanhã mesmo|chegar amanhã|faster|"
     "fastest|quickly|rush", "envio expresso"),
    ("sai hoje|sair hoje|envia hoje|enviam hoje|mandam hoje|despachar|despacham|postam o pedido|"
     "ship today|same day|dispatch", "despacho mesmo dia"),
    ("agendar|agendo|marcar dia|marcar a entrega|combinar a entrega|combinar o dia|combinar a data|"
     "escolher o dia|dia certo|horário da entrega|schedule", "agendamento entrega agendada"),
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
    ("dividir em|dividir no cartão|dividir no cartao|dividir a compra|dividir o valor|parcelado|parcelada|"
     "parcelar|parcelo|vezes sem juros|split the payment", "parcelamento parcela"),
    ("à vista|a vista|avista|upfront", "pagamento à vista pix desconto"),
    ("mais barato|mais barata|barato|abatimento|cheaper", "desconto"),
    ("prestação|prestações|prestacao|prestacoes|parcelas", "parcelamento parcela"),
    ("código de desconto|codigo de desconto|cupom de desconto|promo code|discount code|voucher code", "cupom"),
    ("dois cartões|2 cartões|dois cartoes|2 cartoes|outro cartão|two cards", "dois cartões"),
    ("boas vindas|boas-vindas|primeiro pedido|primeira compra|primeira vez que compro|"
     "comprando pela primeira vez|compra pela primeira vez|first order|first purchase", "primeira compra cupom"),
    ("cupons juntos|usar juntos|acumular|acumula|acumulam|acumulativo|dois cupons|2 cupons|"
     "mais de um cupom|combinar cupons|juntar cupons|somar cupons|stack coupons", "cumulativo cupons"),
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
    ("vale até|vale ate|válido até|valido ate|validade|expira|expirar|vence quando|vence em|venceu|vencido|"
     "vencida|expire|expires", "vence vencimento validade"),
    ("absurdo|salgado|caríssimo|carissimo|pricey|expensive", "caro"),
    ("taxa de entrega|valor da entrega|custo da entrega|custo do envio|preço do envio|entrega grátis|"
     "entrega gratis|sem custo de entrega|shipping cost", "frete"),
    # Services.
    ("montar o|montar a|montar os|montar as|montam|monta o|monta a|montado|montada|montador|montadores|"
     "instalação do|instalação da|assemble|assembled", "montagem"),
    ("buscar na loja|buscar aí|buscar ai|buscar pessoalmente|buscar minha compra|buscar meu pedido|"
     "buscar o pedido|buscar o produto|busco na loja|retirar|retiro|pegar na loja|pego na loja|pegar aí|"
     "pegar ai|pick up|collect", "retirada loja"),
    ("endereço da loja|endereco da loja|onde fica a loja|onde fica loja|pessoalmente|ver de perto|where is the store",
     "loja física"),
    ("showroom|loja física|loja fisica|ponto físico|loja de rua|lojas físicas|loja pra visitar|physical|"
     "in person|visit", "loja física"),
    ("vocês abrem|voces abrem|vcs abrem|loja abre|loja fecha|abre domingo|abre sábado|abre sabado|abre feriado|"
     "expediente|horário de funcionamento|horario de funcionamento|até que horas vocês|até que horas voces|"
     "que horas vocês|que horas voces|que horas abre|que horas a loja|what time do you|are you open|do you open",
     "horário aberto atendimento"),
    ("esgotado|esgotou|esgotada|indisponível|indisponivel|sem estoque|fora de estoque|reposição|"
     "reposicao|voltar ao estoque|volta ao estoque|out of stock|sold out|back in stock|restock",
     "esgotado estoque avise"),
    ("login|logar|entrar na conta|entrar no site|acessar minha conta|acessar a conta|não consigo entrar|"
     "nao consigo entrar|log in|sign in", "senha recuperar conta"),
    ("trocar o endereço|trocar o endereco|trocar endereço|mudar o endereço|mudar o endereco|mudar endereço|"
     "corrigir o endereço|corrigir o endereco|endereço errado|endereco errado|número da casa|numero da casa|"
     "número do prédio|número do apartamento|numero do apartamento|complemento errado|errei o complemento|"
     "rua errada|cep errado|"
     "me mudei|mudei de casa|mudança de endereço|wrong address|change the address|change my address|"
     "change the delivery address", "endereço alterar"),
    ("fora do brasil|fora do país|fora do pais|pro exterior|para o exterior|pra fora do|no exterior|outro país|"
     "outro pais|abroad|overseas|internacional|another country", "internacional international outside"),
    ("embrulhar|embrulho|papel de presente|embalagem de presente|pra presentear|para presentear|presentear|"
     "gift", "presente embrulho wrapping"),
    ("cartão presente|cartão-presente|gift card|giftcard|vale compra|vale-compra|vale compras", "vale-presente"),
    ("lavar|lavo|como limpar|como limpo|limpeza do|limpeza da|mancha|manchou|máquina de lavar|wash|stain",
     "lavagem lavada"),
    ("personalizado|personalizada|tamanho especial|medida especial|sob encomenda|custom|custom-made|made to measure",
     "sob medida"),
)

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


def entries() -> list[Entry]:
    """Every reading, the support vocabulary first, then the places."""
    def words(text: str) -> tuple[str, ...]:
        return tuple(WORD.findall(text.lower()))

    found = []
    for said, adds in RELATED:
        for alternative in said.split("|"):
            found.append(Entry(words(alternative), adds, False, None))
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


class Reading(NamedTuple):
    """What the lexicon adds to one message; the message's own terms that name a place; and those
    of them that a place's reading holds (counted there, not as words of their own)."""

    added: list[Added]
    places: set[str]
    grouped: set[str]


class _Word(NamedTuple):
    term: str  # the index term
    key: str  # how phrases compare it (see `key`)
    bucket: str  # where readings starting with it are kept: its first four letters, folded, singular


class Lexicon:
    """The readings, kept by the first letters of their first word; a reading's words are stemmed
    only when a message first has a word in its bucket (stemming all of them costs a cold
    container a quarter of a second)."""

    def __init__(self) -> None:
        self._fold, self._singular, self._forms, self._analyze = fold, singular, term_and_form, analyze
        self._split = WORD.findall
        self._entries = entries()
        self._buckets: dict[str, list[int]] = {}
        for at, entry in enumerate(self._entries):
            self._buckets.setdefault(self._bucket(entry.words[0]), []).append(at)
        for ats in self._buckets.values():
            ats.sort(key=lambda at: -len(self._entries[at].words))  # the longest phrase first
        self._ready: dict[str, dict[str, list[tuple[tuple[str, ...], list[tuple[str, str]], Entry]]]] = {}
        self._adds: dict[str, list[tuple[str, str]]] = {}
        self._words: dict[str, _Word] = {}
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
            found = _Word(term, key(term, form), self._bucket(said))
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
        found = [self._word(word) for word in raws]
        words = [word.key for word in found]
        buckets = self._buckets
        added: list[Added] = []
        places: set[str] = set()
        grouped: set[str] = set()
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
                    added.append(Added([(term, weight) for term, _ in adds], False))
                matched = True
                break
            if not matched and words[i] in self._street and i + 1 < n:
                places.add(found[i + 1].term)
        return Reading(added, places, grouped)


_LEXICON: Optional[Lexicon] = None


def lexicon() -> Lexicon:
    """The lexicon, built on first use (kept off import)."""
    global _LEXICON
    if _LEXICON is None:
        _LEXICON = Lexicon()
    return _LEXICON
