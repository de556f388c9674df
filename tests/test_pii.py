"""PII redaction: typed placeholders, counts, and the labelled set's precision and recall."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import ROOT
from knowledge.pii import redact


@pytest.mark.parametrize("text, expected", [
    ("mail ana@example.com now", "mail [email] now"),
    ("cpf 529.982.247-25.", "cpf [cpf]."),
    ("cnpj 11.222.333/0001-81", "cnpj [cnpj]"),
    ("card 4111 1111 1111 1111 ok", "card [card] ok"),
    ("tel (11) 98765-4321", "tel [phone]"),
    ("ip 189.45.201.7", "ip [ip]"),
    ("CEP 13083-970, pedido PED-48213, R$ 1.299,90", "CEP 13083-970, pedido PED-48213, R$ 1.299,90"),
])
def test_redaction_uses_typed_placeholders(text, expected):
    assert redact(text).text == expected


def test_redaction_counts_each_kind():
    result = redact("a@b.co, c@d.io, 529.982.247-25 and +1 415 555 0132")
    assert result.counts == {"email": 2, "cpf": 1, "phone": 1}


def test_a_valid_cpf_is_a_cpf_not_a_phone_and_an_invalid_one_is_left_alone():
    assert redact("52998224725").counts == {"cpf": 1}
    assert redact("123.456.789-00").counts == {}


def test_the_labelled_set_meets_its_bar():
    result = subprocess.run([sys.executable, str(ROOT / "scripts" / "pii_report.py"), "--json"],
                            capture_output=True, text=True, check=True)
    report = json.loads(result.stdout)
    assert report["rows"] >= 50
    overall = report["table"]["all"]
    assert overall["recall"] == 1.0, report["misses"]
    assert overall["precision"] >= 0.95, report["misses"]
    for kind in ("email", "card", "cnpj", "cpf", "ip"):
        assert report["table"][kind]["precision"] == 1.0, (kind, report["misses"])
