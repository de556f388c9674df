"""Synthetic concepts for the benchmarks: a Zipf-distributed vocabulary of store words (then made-up
words with Portuguese-like syllables), concepts drawn from it, and questions in the same words."""

from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone

SEED_WORDS = """frete entrega prazo pedido troca devolução reembolso estorno pix boleto cartão parcela juros
desconto cupom promoção garantia montagem móveis sofá cama colchão guarda-roupa mesa cadeira estante
armário tapete cortina luminária cozinha banheiro quarto sala jardim cep campinas recife manaus curitiba
porto alegre salvador fortaleza belo horizonte rio janeiro são paulo sudeste nordeste norte sul
centro-oeste distribuição transportadora correios rastreio código nota fiscal e-mail telefone
atendimento horário loja física retirada agendamento avaria embalagem caixa defeito fabricação
tecido linho algodão madeira metal vidro cor tamanho medida altura largura profundidade peso volume
estoque disponibilidade reposição encomenda personalizado kit conjunto combo brinde embrulho presente
cadastro senha conta login site aplicativo checkout carrinho pagamento aprovado recusado cancelado
despachado enviado entregue coletado devolvido trocado reembolsado estornado""".split()
TYPES = ("fact", "entity", "procedure", "policy", "objection")


def vocabulary(size: int, rng: random.Random) -> list[str]:
    """Store words first (the most frequent), then made-up words with Portuguese-like syllables."""
    syllables = ["ca", "de", "li", "mo", "ra", "te", "su", "po", "ven", "tra", "gran", "pe", "lo", "ni", "ção",
                 "men", "to", "sa", "ba", "re", "fi", "co", "ma", "vi", "ta", "es", "in", "al", "or", "ur"]
    words = list(dict.fromkeys(SEED_WORDS))
    seen = set(words)
    while len(words) < size:
        word = "".join(rng.choice(syllables) for _ in range(rng.randint(2, 4)))
        if word not in seen:
            seen.add(word)
            words.append(word)
    return words


class Zipf:
    def __init__(self, words: list[str], rng: random.Random, s: float = 1.07):
        self.words, self.rng = words, rng
        weights = [1 / (rank + 1) ** s for rank in range(len(words))]
        total = sum(weights)
        self.cumulative = []
        acc = 0.0
        for w in weights:
            acc += w / total
            self.cumulative.append(acc)

    def sample(self, n: int) -> list[str]:
        import bisect

        return [self.words[min(len(self.words) - 1, bisect.bisect(self.cumulative, self.rng.random()))]
                for _ in range(n)]


def corpus(n: int, seed: int = 7):
    zipf = Zipf(vocabulary(8000, random.Random(seed)), random.Random(seed))
    return list(generate(n, zipf, seed)), zipf


def generate(n: int, zipf: "Zipf", seed: int = 7):
    """Synthetic concepts, one at a time."""
    from knowledge.format.concept import Concept

    rng = random.Random(seed + 1)
    # Dated before the run, not on a fixed day: the agent's default stale rule (180 days) takes a
    # concept out of recall, and a corpus dated once went stale whole, so the handler benches timed
    # empty answers. The last concept is a month old, each one before it a minute older.
    start = datetime.now(timezone.utc).replace(second=0, microsecond=0) - timedelta(days=30, minutes=n)
    for i in range(n):
        name = "-".join(w for w in zipf.sample(3) if w.isascii() and "-" not in w)[:50].strip("-") or "c"
        yield Concept(
            name=f"{name}-{i}", description=" ".join(zipf.sample(rng.randint(8, 16))).capitalize() + ".",
            type=TYPES[i % len(TYPES)], provenance="observed", confidence=0.6, sources=(f"sess_{i}",),
            occurrences=1, created_at=start, updated_at=start + timedelta(minutes=i),
            body=" ".join(zipf.sample(rng.randint(30, 70))).capitalize() + ".")


def queries(zipf: Zipf, n: int) -> list[str]:
    glue = ["o", "a", "de", "para", "quanto", "qual", "meu", "tem", "como", "é"]
    return [" ".join(zipf.sample(random.Random(i).randint(3, 6)) + glue[i % len(glue):i % len(glue) + 2]) + "?"
            for i in range(n)]


def build_index(concepts, scaled_gate: bool = True):
    """The concepts in a settled recall index, as a warm container holds them (`scaled_gate` False:
    min_score read as the raw BM25 score, the small-index report's comparison)."""
    from knowledge.recall.index import Index

    index = Index(scaled_gate)
    for c in concepts:
        index.upsert(c.name, "etag", c, c.render().encode())
    index.settle()
    return index
