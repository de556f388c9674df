#!/usr/bin/env python3
"""Measure your own model: the labelled claim pairs through the real judge, and sample turns
through the real extractor (its prompt and gates), against your endpoint.

    OPENAI_BASE_URL=http://127.0.0.1:11434/v1 ./run script reports.eval_model --model openai:llama3.1
    ./run script reports.eval_model --model bedrock:<model-id>       # AWS credentials from the environment
    ... [--config knowledge.yaml] [--turns tests/data/eval_turns.jsonl] [--json]
    ./run script reports.eval_model --smoke   # a scripted local model: the wiring, not a model's figures

Prints the judge's confusion table (label by verdict, every pair asked), what consolidation
would do with each set (the no-model check first, the judge for the rest: a different claim
confirmed or merged is the failure that matters), and the gates' pass and reject counts by
reason. Figures only: no prompt, answer or claim text is printed. It ends with the pairs the judge
answered with a verdict (a model error is none).
"""

from __future__ import annotations

import json
import os
import sys
from collections import Counter
from pathlib import Path
from typing import Optional

from knowledge.format.config import AgentConfig, KnowledgeConfig, parse_config
from knowledge.format.turn import parse_turn
from knowledge.learning import claims
from knowledge.learning.extract import Extractor
from scripts.lib.harness import ROOT, did_work, parser
from scripts.reports import claims as claims_report
from shared.errors import KnowledgeError, ModelError
from shared.model import Model, ModelCache

TURNS = ROOT / "tests" / "data" / "eval_turns.jsonl"
CONFIG = ROOT / "devstack" / "knowledge_dev" / "demo" / "knowledge.yaml"
VERDICTS = ("same", "related", "contradicting", "unusable", "model_error")


class _OneConfig:
    """The extractor's config source, answering one `knowledge:` block for every agent."""

    def __init__(self, config: KnowledgeConfig):
        self._config = config

    def get(self, tenant: str, agent: str) -> Optional[KnowledgeConfig]:
        return self._config

    def both(self, tenant: str, agent: str) -> AgentConfig:
        return AgentConfig(self._config)


def judge_pairs(model: Model) -> dict:
    sets = {name: claims_report.load_pairs(path) for name, path in claims_report.SETS.items()}
    confusion = {name: {label: Counter() for label in claims_report.LABELS} for name in sets}
    verdicts: dict[str, str] = {}
    for name, pairs in sets.items():
        for pair in pairs:
            verdict = claims_report.judge(model, pair)
            answer = verdict.kind if verdict.why in claims.KINDS else verdict.why
            verdicts[pair["id"]] = answer
            confusion[name][pair["label"]][answer] += 1

    def decide(pair: dict, _model: Optional[Model]) -> str:
        if claims.same_claim(claims_report.concept(pair, "recorded"), claims_report.concept(pair, "new")):
            return "confirmed"
        return verdicts[pair["id"]]

    return {"confusion": {name: {label: {v: counts[v] for v in VERDICTS} for label, counts in table.items()}
                          for name, table in confusion.items()},
            "pipeline": {name: claims_report.tally(pairs, model, decide) for name, pairs in sets.items()}}


def extract_turns(model_ref: str, config: KnowledgeConfig, turns_path: Path, environ: dict) -> dict:
    rows = [json.loads(line) for line in turns_path.read_text(encoding="utf-8").splitlines() if line.strip()]
    extractor = Extractor(_OneConfig(config.model_copy(update={"model": model_ref, "extract": True})), None, None,
                          ModelCache(environ), model_ref)
    rejected, redacted = Counter(), Counter()
    passed = model_errors = 0
    expected = Counter()
    for row in rows:
        turn = parse_turn(json.dumps(row["turn"], ensure_ascii=False))
        try:
            outcome = extractor.process(turn, archive=False, send=False)
        except ModelError:
            model_errors += 1
            continue
        passed += len(outcome.sightings)
        rejected.update(outcome.rejected)
        redacted.update(outcome.redacted)
        expected[(row["expect"], bool(outcome.sightings))] += 1
    return {"turns": len(rows), "model_errors": model_errors, "passed": passed,
            "rejected": dict(sorted(rejected.items())), "redacted": dict(sorted(redacted.items())),
            "durable_turns": sum(n for (expect, _), n in expected.items() if expect == "concepts"),
            "durable_turns_with_a_candidate": expected[("concepts", True)],
            "small_talk_turns": sum(n for (expect, _), n in expected.items() if expect == "none"),
            "small_talk_turns_with_a_candidate": expected[("none", True)]}


def evaluate(model_ref: str, config_path: Path = CONFIG, turns_path: Path = TURNS,
             environ: Optional[dict] = None) -> dict:
    environ = dict(os.environ if environ is None else environ)
    config = parse_config(config_path.read_text(encoding="utf-8"))
    if config is None:
        raise SystemExit(f"{config_path} holds no knowledge: block")
    model = ModelCache(environ).get(model_ref)
    return {"model": model_ref, "judge": judge_pairs(model),
            "extraction": extract_turns(model_ref, config, turns_path, environ)}


def _print(report: dict) -> None:
    print(f"Model {report['model']}\n")
    print("Judge: label by verdict (every labelled pair asked)")
    print(f"  {'set':<9} {'label':<10}" + "".join(f"{v:>15}" for v in VERDICTS))
    for name, table in report["judge"]["confusion"].items():
        for label, counts in table.items():
            print(f"  {name:<9} {label:<10}" + "".join(f"{counts[v]:>15}" for v in VERDICTS))
    print("\nConsolidation with this judge (the no-model check first, the judge for the rest)")
    print(f"  {'set':<9} {'different confirmed':>20} {'different merged':>17} {'rewordings confirmed':>22}")
    for name, row in report["judge"]["pipeline"].items():
        share = f"{row['rewordings_confirmed']}/{row['same']} ({row['rewordings_confirmed_share']:.0%})"
        print(f"  {name:<9} {row['different_confirmed']:>14}/{row['different']:<5} {row['different_merged']:>17} "
              f"{share:>22}")
        for item in row["different_kept_as_one"]:
            print(f"    ! {item['id']} ({item['kind']}): a different claim ended {item['outcome']}")
    ex = report["extraction"]
    print(f"\nExtraction: {ex['turns']} turns, {ex['model_errors']} model errors")
    print(f"  candidates passed the gates: {ex['passed']}")
    for reason, count in ex["rejected"].items():
        print(f"  rejected {reason}: {count}")
    for kind, count in ex["redacted"].items():
        print(f"  redacted {kind}: {count}")
    print(f"  turns with durable knowledge that yielded a candidate: "
          f"{ex['durable_turns_with_a_candidate']}/{ex['durable_turns']}")
    print(f"  small-talk or one-customer turns that yielded a candidate: "
          f"{ex['small_talk_turns_with_a_candidate']}/{ex['small_talk_turns']}")


def main() -> int:
    parser_ = parser(__doc__, smoke="against a scripted local model that answers 'same' and no candidates")
    parser_.add_argument("--model", help="openai:<name> (with OPENAI_BASE_URL) or bedrock:<model-id>")
    parser_.add_argument("--config", type=Path, default=CONFIG, help="the agent's knowledge.yaml (types, prompt)")
    parser_.add_argument("--turns", type=Path, default=TURNS)
    args = parser_.parse_args()
    if not args.model and not args.smoke:
        parser_.error("--model is required (or --smoke)")
    try:
        if args.smoke:
            from knowledge_dev.scripted_model import ScriptedModel

            answer = lambda request: "[]" if "You compare two claims" not in request["messages"][0]["content"] \
                else json.dumps({"verdict": "same"})  # noqa: E731
            with ScriptedModel(answer) as model:
                report = evaluate("openai:scripted", args.config, args.turns,
                                  {**os.environ, "OPENAI_BASE_URL": model.base_url})
        else:
            report = evaluate(args.model, args.config, args.turns)
    except KnowledgeError as exc:  # a bad model reference, a missing OPENAI_BASE_URL, a bad knowledge.yaml
        print(f"eval_model: {exc} ({exc.code})", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(report, indent=1, ensure_ascii=False))
    else:
        _print(report)
    asked = [counts for table in report["judge"]["confusion"].values() for counts in table.values()]
    did_work("labelled pairs the judge answered with a verdict", sum(sum(c.values()) - c["model_error"] for c in asked),
             sum(sum(c.values()) for c in asked), as_json=args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
