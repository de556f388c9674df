#!/usr/bin/env python3
"""Name convergence: does the extraction request show the model the known concept a turn is
about, and how many near-duplicate concepts does a replay create with that list and without it.

    ./run script reports.convergence [--padded 500] [--json] [--smoke]

Runs the real Extractor and Consolidator against S3 (a moto server started here) and a model
stub (a real local HTTP server) that, like a real model, reuses a concept's name when the
request offers it and otherwise invents a fresh variant of it (words reordered, then "-2",
"-3"…). Per labelled set (tuning, held-out), against an agent with the 45 labelled concepts
and against the same agent padded to --padded concepts, it prints: the share of turns whose
known concept's name is in the extraction request, the most names any request listed, and the
concepts the replay created (each one a near-duplicate: every turn is about a known concept); it
ends with the turns whose known concept the request named. --smoke: five tuning turns, 60 concepts.
"""

from __future__ import annotations

import json
import random
import sys
import unicodedata
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Optional

from knowledge.format.concept import Concept
from knowledge.format.turn import parse_turn
from knowledge.learning.consolidate import Consolidator
from knowledge.learning.extract import Extractor
from knowledge.learning.known import KnownConcepts
from knowledge.learning.prompt import KNOWN_HEADING
from knowledge.store.concepts import ConceptStore
from knowledge.store.config_cache import ConfigCache
from knowledge.store.ledgers import SightingLedger
from scripts.lib.harness import ROOT, did_work, emit, moto, parser
from shared.model import ModelCache
from shared.telemetry import Counters

DATA = ROOT / "tests" / "data"
SETS = {"tuning": DATA / "convergence_turns.jsonl", "held-out": DATA / "convergence_turns_heldout.jsonl"}
CONCEPTS = DATA / "convergence_turns_concepts.jsonl"
TENANT = "default"
MODEL_REF = "openai:naming-stub"
CONFIG = "knowledge:\n  types: [fact, entity, procedure, policy, objection]\n"
SEEDED_AT = datetime(2026, 10, 1, 12, 0, tzinfo=timezone.utc)


# ------------------------------------------------------------------ the data


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def load_turns(path: Path) -> list[dict]:
    """Labelled turns: {"concept": the known concept's name, "turn": a turn-complete body}."""
    return _rows(path)


def concept(name: str, type_: str, description: str, body: str, age_hours: int = 0) -> Concept:
    # Each concept learned at its own time: the search breaks ties by recency, so the figures
    # do not depend on the order S3 happened to list the seeded concepts in.
    at = SEEDED_AT - timedelta(hours=age_hours)
    return Concept(name=name, description=description, type=type_, provenance="observed", confidence=0.6,
                   sources=("sess_seed",), occurrences=1, created_at=at, updated_at=at, body=body)


def agent_concepts() -> list[Concept]:
    """The labelled agent's concepts (every turn of both sets is about one of them)."""
    return [concept(row["name"], row["type"], row["description"], row["body"], age_hours=40 * i)
            for i, row in enumerate(_rows(CONCEPTS))]


_CITIES = ["Manaus", "Belém", "Porto Alegre", "Florianópolis", "Goiânia", "Brasília", "Salvador", "Fortaleza",
           "Natal", "Vitória", "Belo Horizonte", "Londrina", "Ribeirão Preto", "Sorocaba", "Santos", "Joinville",
           "Uberlândia", "Cuiabá", "Campo Grande", "São Luís", "Teresina", "Maceió", "Aracaju", "João Pessoa"]
_PRODUCTS = ["sofá retrátil", "cama box", "guarda-roupa", "rack", "mesa de jantar", "cadeira gamer",
             "colchão de molas", "poltrona", "estante", "escrivaninha", "tapete", "luminária", "cortina blackout",
             "jogo de panelas", "air fryer", "ventilador de teto", "cômoda", "painel de TV", "banqueta", "espelho"]
_MODELS = ["Aurora", "Lisboa", "Nápoles", "Ipanema", "Tóquio", "Oslo", "Verona", "Bahia", "Sevilha", "Milão"]
_COLORS = ["cinza", "bege", "azul petróleo", "verde musgo", "preto", "off-white", "caramelo", "terracota"]
_BRANDS = ["Mondial", "Arno", "Britânia", "Electrolux", "Philco", "Oster"]


def _slug(text: str) -> str:
    folded = "".join(c for c in unicodedata.normalize("NFKD", text.lower()) if not unicodedata.combining(c))
    return "-".join("".join(c if c.isalnum() else " " for c in folded).split())


def padding(count: int, seed: int = 7) -> list[Concept]:
    """`count` plausible store concepts about other things (products, other cities' shipping,
    promotions), sharing the labelled concepts' vocabulary (frete, entrega, prazo, CEP, troca…)
    so that they compete with them in the search."""
    rng = random.Random(seed)
    makers = [
        lambda: (f"frete-{_slug(c := rng.choice(_CITIES))}-{(v := rng.randint(19, 89))}", "fact",
                 f"Frete para {c} custa R${v},90 em pedidos abaixo de R$199.",
                 f"O frete para {c} é calculado no checkout; para pedidos abaixo de R$199 fica em R${v},90."),
        lambda: (f"entrega-{_slug(p := rng.choice(_PRODUCTS))}-{_slug(c := rng.choice(_CITIES))}", "fact",
                 f"Entrega de {p} em {c} leva de {(n := rng.randint(2, 9))} a {n + 3} dias úteis.",
                 f"O prazo de entrega de {p} para {c} é de {n} a {n + 3} dias úteis após o despacho."),
        lambda: (f"medidas-{_slug(p := rng.choice(_PRODUCTS))}-{_slug(m := rng.choice(_MODELS))}", "entity",
                 f"{p.capitalize()} {m}: {rng.randint(40, 220)} x {rng.randint(30, 120)} x "
                 f"{rng.randint(30, 110)} cm.",
                 f"Medidas do {p} {m}, com embalagem de {rng.randint(5, 60)} kg."),
        lambda: (f"cor-{_slug(p := rng.choice(_PRODUCTS))}-{_slug(m := rng.choice(_MODELS))}-"
                 f"{_slug(k := rng.choice(_COLORS))}", "fact", f"{p.capitalize()} {m} disponível na cor {k}.",
                 f"O {p} {m} tem a cor {k} em estoque; outras cores sob encomenda."),
        lambda: (f"garantia-{_slug(p := rng.choice(_PRODUCTS))}-{_slug(b := rng.choice(_BRANDS))}", "policy",
                 f"{p.capitalize()} {b} tem garantia de {(g := rng.choice([3, 6, 12, 24]))} meses do fabricante.",
                 f"A garantia do {p} {b} é de {g} meses e a troca em caso de defeito segue a política da loja."),
        lambda: (f"cep-{_slug(c := rng.choice(_CITIES))}-prazo-{(n := rng.randint(2, 12))}-dias", "fact",
                 f"CEPs de {c} recebem em até {n} dias úteis.",
                 f"Pedidos com CEP de {c} chegam em até {n} dias úteis depois do despacho."),
        lambda: (f"promocao-{_slug(p := rng.choice(_PRODUCTS))}-{(d := rng.choice([5, 10, 15, 20]))}-pix", "policy",
                 f"{p.capitalize()} com {d}% de desconto no Pix durante a campanha.",
                 f"Durante a campanha o {p} tem {d}% de desconto no pagamento via Pix, não cumulativo com cupons."),
        lambda: (f"montagem-{_slug(p := rng.choice(_PRODUCTS))}-{_slug(c := rng.choice(_CITIES))}", "procedure",
                 f"Como agendar a montagem de {p} em {c}.",
                 f"A montagem de {p} em {c} é agendada pela central em até {rng.randint(2, 7)} dias úteis "
                 "após a entrega."),
    ]
    taken = {c.name for c in agent_concepts()}
    out: list[Concept] = []
    while len(out) < count:
        name, type_, description, body = rng.choice(makers)()
        if name not in taken and len(name) <= 64:
            taken.add(name)
            out.append(concept(name, type_, description, body, age_hours=rng.randint(0, 2000)))
    return out


# ------------------------------------------------------------------ the model stub


def offered_names(request: dict) -> list[str]:
    """The names an extraction request lists as known concepts ([] when it lists none)."""
    user = request["messages"][-1]["content"]
    if not user.startswith(KNOWN_HEADING):
        return []
    listed = user[len(KNOWN_HEADING):].split("\n\n", 1)[0]
    return [entry["name"] for entry in json.loads(listed)]


def variant(name: str, misses: int) -> str:
    """A fresh name a model might choose for the same thing: words reordered, then -2, -3…"""
    if misses == 0:
        words = name.split("-")
        return "-".join(words[1:] + words[:1]) if len(words) > 1 else f"{name}-info"
    return f"{name}-{misses + 1}"


class NamingModel:
    """Answers an extraction request with one candidate for the turn's labelled concept: under a
    name the request offers (the concept's own, or a variant it invented before), or under a
    fresh variant. Answers a consolidation judge with "same"."""

    def __init__(self, concepts: list[Concept]):
        self._concepts = {c.name: c for c in concepts}
        self.row: Optional[dict] = None  # the labelled turn being extracted now
        self.requests: list[dict] = []
        self.invented: dict[str, list[str]] = {}

    def __call__(self, request: dict) -> str:
        if "You extract durable knowledge" not in request["messages"][0]["content"]:
            return json.dumps({"verdict": "same"})
        assert self.row is not None
        self.requests.append(request)
        known = self._concepts[self.row["concept"]]
        offered = offered_names(request)
        mine = [known.name, *self.invented.get(known.name, [])]
        name = next((n for n in mine if n in offered), None)
        if name is None:
            tried = self.invented.setdefault(known.name, [])
            name = variant(known.name, len(tried))
            tried.append(name)
        said = [m["content"] for m in self.row["turn"]["messages"]
                if m["role"] == ("user" if known.type == "objection" else "assistant")]
        return json.dumps([{"name": name, "description": known.description, "type": known.type,
                            "body": known.body, "evidence": said[-1]}], ensure_ascii=False)


class _NoEvents:
    def publish(self, detail_type: str, detail: dict) -> None:
        pass


class _Consolidating:
    """The CandidatesQueue, short-circuited: each sighting is consolidated at once."""

    def __init__(self, consolidator: Consolidator):
        self._consolidator = consolidator
        self.outcomes: list[str] = []

    def send(self, sightings: list) -> None:
        for sighting in sightings:
            self.outcomes.append(self._consolidator.apply(sighting).kind)


# ------------------------------------------------------------------ the replay


def seed_agent(store: ConceptStore, agent: str, concepts: list[Concept]) -> None:
    store.put_config(TENANT, agent, CONFIG, actor="operator:report")
    with ThreadPoolExecutor(max_workers=16) as pool:
        list(pool.map(lambda c: store.create(TENANT, agent, c, actor="engine"), concepts))


def replay(s3: Any, bucket: str, sessions_bucket: str, rows: list[dict], concepts: list[Concept],
           with_list: bool) -> dict:
    """Every labelled turn through the real Extractor and Consolidator, in order, on a new agent."""
    from knowledge_dev.scripted_model import ScriptedModel

    agent = f"conv-{uuid.uuid4().hex[:10]}"
    store = ConceptStore(s3, bucket, max_workers=32)
    seed_agent(store, agent, concepts)
    stub = NamingModel(concepts)
    with ScriptedModel(stub) as server:
        models = ModelCache({"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": ""})
        counters = Counters()
        sink = _Consolidating(Consolidator(store, SightingLedger(s3, sessions_bucket), _NoEvents(),
                                           ConfigCache(store), models, MODEL_REF))
        # A warm container: the first turn may take the whole index, however slow the local S3 is
        # (a cold container's budget is the retrieval benchmark's subject, not this report's).
        known = (KnownConcepts(store, refresh_seconds=0, fetch_budget_seconds=120, counters=counters)
                 if with_list else None)
        extractor = Extractor(ConfigCache(store), None, sink, models, MODEL_REF, counters=counters, known=known)
        for row in rows:
            stub.row = row
            extractor.process(parse_turn(json.dumps({**row["turn"], "tenant": TENANT, "agent": agent},
                                                    ensure_ascii=False)), archive=False)
    listed = [offered_names(request) for request in stub.requests]
    named = sum(1 for row, names in zip(rows, listed) if row["concept"] in names)
    after = {item.name for item in store.list(TENANT, agent)}
    created = sorted(after - {c.name for c in concepts})
    ranks = sorted(names.index(row["concept"]) + 1 for row, names in zip(rows, listed) if row["concept"] in names)
    return {"turns": len(rows), "named_in_request": named, "share_named": round(named / len(rows), 3),
            "max_listed": max((len(names) for names in listed), default=0),
            "rank_median": ranks[len(ranks) // 2] if ranks else None, "rank_worst": ranks[-1] if ranks else None,
            "near_duplicates": len(created), "outcomes": dict(sorted(Counter(sink.outcomes).items())),
            "missed": [row["concept"] for row, names in zip(rows, listed) if row["concept"] not in names]}


def measure(endpoint: str, padded: int = 500, sets: Optional[dict[str, Path]] = None,
            turns: Optional[int] = None) -> dict:
    """The report's figures, against the S3 endpoint given (`turns`: the first so many of each set)."""
    import boto3

    s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
    bucket, sessions_bucket = f"conv-{uuid.uuid4().hex[:12]}", f"conv-sessions-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(Bucket=bucket)
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    s3.create_bucket(Bucket=sessions_bucket)
    base = agent_concepts()
    large = base + padding(padded - len(base))
    report: dict[str, Any] = {"concepts": len(base), "padded_to": len(large), "sets": {}}
    for label, path in (sets or SETS).items():
        rows = load_turns(path)[:turns]
        report["sets"][label] = {
            "with_list": replay(s3, bucket, sessions_bucket, rows, base, with_list=True),
            "without_list": replay(s3, bucket, sessions_bucket, rows, base, with_list=False),
            "padded_with_list": replay(s3, bucket, sessions_bucket, rows, large, with_list=True),
        }
    return report


def _print(report: dict) -> None:
    n, big = report["concepts"], report["padded_to"]
    print("Name convergence: labelled turns about known concepts, real Extractor + Consolidator, "
          "a model stub that reuses an offered name and invents a variant otherwise\n")
    print(f"{'set':<10} {'turns':>5}  {'named in request':>18} {'max listed':>10} {'rank p50/worst':>14}  "
          f"{'near-duplicates created':>24}")
    for label, runs in report["sets"].items():
        for key, agent in (("with_list", f"{n} concepts"), ("padded_with_list", f"{big} concepts")):
            run = runs[key]
            print(f"{label:<10} {run['turns']:>5}  {run['named_in_request']:>3}/{run['turns']:<3} "
                  f"({run['share_named']:>5.0%})    {run['max_listed']:>7} "
                  f"{run['rank_median']:>8}/{run['rank_worst']:<5}  "
                  f"with list {run['near_duplicates']:>3}   ({agent})")
        without = runs["without_list"]
        print(f"{label:<10} {without['turns']:>5}  {'(no list)':>18} {without['max_listed']:>10} {'':>14}  "
              f"without list {without['near_duplicates']:>3}   ({n} concepts)")
        for key in ("with_list", "padded_with_list"):
            if runs[key]["missed"]:
                print(f"{'':<10} not offered ({key}): {', '.join(runs[key]['missed'])}")
    print("\ntargets: named in request >= 90%, at most 30 names listed")


def main() -> int:
    parser_ = parser(__doc__)
    parser_.add_argument("--padded", type=int, default=500, help="concepts of the padded agent (default 500)")
    args = parser_.parse_args()
    smoke = {"padded": 60, "sets": {"tuning": SETS["tuning"]}, "turns": 5} if args.smoke else {}
    with moto("local") as endpoint:
        report = measure(endpoint, **{"padded": args.padded, **smoke})
    emit(report, args.json, lambda: _print(report))
    runs = [runs["with_list"] for runs in report["sets"].values()]
    did_work("labelled turns whose known concept the request named", sum(r["named_in_request"] for r in runs),
             sum(r["turns"] for r in runs), as_json=args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
