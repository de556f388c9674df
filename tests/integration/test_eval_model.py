"""scripts/reports/eval_model.py against a scripted model server: the real judge and extractor code, the figures it prints."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from helpers.paths import ROOT

from knowledge_dev.scripted_model import ScriptedModel

DATA = ROOT / "tests" / "data"
SCRIPT = ["-m", "scripts.reports.eval_model"]  # run from the repository root


def _rows(name):
    return [json.loads(line) for line in (DATA / name).read_text(encoding="utf-8").splitlines() if line.strip()]


PAIRS = {"tuning": _rows("claim_pairs.jsonl"), "held-out": _rows("claim_pairs_heldout.jsonl")}
TURNS = _rows("eval_turns.jsonl")
# Where this scripted judge goes wrong on purpose, so the table must show it.
MERGES, GARBLES = {"t01"}, {"h13"}


def _about(pair, prompt):
    return all(json.dumps(text, ensure_ascii=False)[1:-1] in prompt
               for text in (pair["recorded"]["body"], pair["new"]["body"], pair["new"]["description"]))


def _store_said(turn):
    return next(m["content"] for m in turn["messages"] if m["role"] == "assistant")


def respond(request):
    system, user = (m["content"] for m in request["messages"])
    if "You compare two claims" in system:
        pair = next(p for pairs in PAIRS.values() for p in pairs if _about(p, user))
        if pair["id"] in MERGES:
            return json.dumps({"verdict": "related", "description": "Merged.", "body": "Merged."})
        if pair["id"] in GARBLES:
            return "I would say these are mostly the same."
        return json.dumps({"verdict": "same" if pair["label"] == "same" else "contradicting"})
    row = next(r for r in TURNS if json.dumps(_store_said(r["turn"]), ensure_ascii=False)[1:-1] in user)
    if row["expect"] == "none":
        return "[]"
    said = _store_said(row["turn"])
    return json.dumps([
        {"name": f"regra-{row['turn']['turn_id'].replace('_', '-')}", "description": said.split(".")[0] + ".",
         "type": "fact", "body": said, "evidence": said[:60]},
        {"name": "inventado", "description": "Something nobody said.", "type": "fact", "body": "Made up.",
         "evidence": "a quote that appears nowhere in the conversation"},
    ], ensure_ascii=False)


@pytest.fixture
def server():
    with ScriptedModel(respond) as model:
        yield model


def run(server, *args):
    env = {"OPENAI_BASE_URL": server.base_url, "PATH": "/usr/bin:/bin"}
    return subprocess.run([sys.executable, *SCRIPT, "--model", "openai:scripted", *args], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=300)


def test_the_judges_confusion_table_and_the_gates_counts_come_from_the_models_answers(server):
    result = run(server, "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    tuning, held_out = report["judge"]["confusion"]["tuning"], report["judge"]["confusion"]["held-out"]
    same_t = sum(p["label"] == "same" for p in PAIRS["tuning"])
    assert tuning["same"] == {"same": same_t, "related": 0, "contradicting": 0, "unusable": 0, "model_error": 0}
    assert tuning["different"]["related"] == 1
    assert tuning["different"]["contradicting"] == len(PAIRS["tuning"]) - same_t - 1
    assert held_out["different"]["unusable"] == 1
    # The merge the judge got wrong reaches the pipeline figure: a different claim kept as one.
    pipeline = report["judge"]["pipeline"]["tuning"]
    assert pipeline["different_merged"] == 1 and pipeline["different_kept_as_one"][0]["id"] == "t01"
    assert report["judge"]["pipeline"]["held-out"]["different_confirmed"] == 0

    extraction = report["extraction"]
    durable = sum(r["expect"] == "concepts" for r in TURNS)
    assert extraction["turns"] == len(TURNS) and extraction["model_errors"] == 0
    assert extraction["passed"] == durable == extraction["durable_turns_with_a_candidate"]
    assert extraction["rejected"] == {"evidence_not_found": durable}
    assert extraction["small_talk_turns_with_a_candidate"] == 0
    # Every pair went to the judge once, every turn to the extractor once.
    assert len(server.requests) == len(PAIRS["tuning"]) + len(PAIRS["held-out"]) + len(TURNS)


def test_the_table_prints_figures_and_never_the_claims_or_turns(server):
    result = run(server)
    assert result.returncode == 0, result.stderr
    assert "Judge: label by verdict" in result.stdout and "rejected evidence_not_found" in result.stdout
    assert "t01 (negation): a different claim ended related" in result.stdout
    for text in ("promoção", "Campinas", "R$199"):
        assert text not in result.stdout


def test_a_missing_endpoint_is_a_clear_error():
    result = subprocess.run([sys.executable, *SCRIPT, "--model", "openai:x"], env={"PATH": "/usr/bin:/bin"},
                            cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and "OPENAI_BASE_URL" in result.stderr and result.stdout == ""
