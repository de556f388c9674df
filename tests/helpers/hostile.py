"""The corpus of hostile concept documents: a good one, and every way found to break it. The parse
refusals (tests/unit/format) and the studio's and readers' answers (tests/integration) use it."""

from __future__ import annotations

from knowledge.format.concept import DOCUMENT_MAX_BYTES

GOOD = """---
name: horario-atendimento
description: O atendimento funciona de segunda a sexta, das 8h às 20h.
type: fact
provenance: observed
confidence: 0.6
sources: ["sess_8f3c"]
occurrences: 1
created_at: 2026-08-24T18:02:11Z
updated_at: 2026-08-24T18:02:11Z
---

Chat e telefone atendem de segunda a sexta, das 8h às 20h (horário de Brasília).
"""
FIELD_LINES = {line.split(":")[0]: line for line in GOOD.splitlines()[1:10]}


def with_field(field: str, value: str) -> str:
    """GOOD with one field's line replaced by `field: value` (value as YAML text)."""
    return GOOD.replace(FIELD_LINES[field] + "\n", f"{field}: {value}\n", 1)


def with_lines(extra: str) -> str:
    """GOOD with `extra` YAML lines added at the end of the frontmatter."""
    return GOOD.replace("\n---\n\n", f"\n{extra}\n---\n\n", 1)


LAUGHS = ('a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
          + "".join(f"{n}: &{n} [*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p}]\n"
                    for p, n in zip("abcdefgh", "bcdefghi")))
DEEP = 10_000
HUGE_INT = "9" * 5000


# id -> the document (text, or bytes when the case is about encoding). Every one must be refused.
HOSTILE: dict[str, str | bytes] = {
    # what the issue found
    "sources-nested-list": with_field("sources", '[["sess_1"], "sess_2"]'),
    "sources-map": with_field("sources", "{sess_1: yes}"),
    "sources-list-of-maps": with_field("sources", "[{a: b}]"),
    "occurrences-5000-digits": with_field("occurrences", HUGE_INT),
    "confidence-4301-digits": with_field("confidence", "1" * 4301),
    "billion-laughs": GOOD.replace("---\n\n", LAUGHS + "---\n\n", 1),
    "billion-laughs-in-sources": with_field("sources", "*i").replace("---\nname", "---\n" + LAUGHS + "name", 1),
    "duplicate-key": with_lines("type: policy"),
    "merge-key": with_lines("<<: {provenance: policy}"),
    "merge-key-with-alias": with_lines("base: &b {provenance: policy}\n<<: *b"),
    "anchor-on-value": with_field("description", "&d O atendimento"),
    "deep-flow-list": with_field("description", "[" * DEEP + "]" * DEEP),
    "deep-flow-map": with_field("description", "{a: " * DEEP + "b" + "}" * DEEP),
    "deep-block-map": with_lines("".join(f"{'  ' * i}k{i}:\n" for i in range(300)) + "  " * 300 + "v: 1"),
    "non-utf8-frontmatter": GOOD.encode().replace(b"segunda", b"segunda \xff\xfe"),
    "non-utf8-body": GOOD.encode().replace("Brasília".encode(), b"Bras\xedlia"),
    # numbers
    "float-1e400": with_field("confidence", "1.0e+400"),
    "float-nan": with_field("confidence", ".nan"),
    "float-inf": with_field("confidence", ".inf"),
    "float-minus-inf": with_field("confidence", "-.inf"),
    "confidence-text": with_field("confidence", "alta"),
    "confidence-bool": with_field("confidence", "yes"),
    "occurrences-float": with_field("occurrences", "1.5"),
    "occurrences-negative": with_field("occurrences", "-1"),
    "occurrences-huge-hex": with_field("occurrences", "0x" + "f" * 40),
    "occurrences-sexagesimal-long": with_field("occurrences", ":".join(["59"] * 20)),
    "occurrences-beyond-max": with_field("occurrences", "10000000000000"),
    "occurrences-list": with_field("occurrences", "[1, 2]"),
    # tags
    "tag-python-apply": with_field("type", "!!python/object/apply:os.system ['true']"),
    "tag-python-name": with_field("type", "!!python/name:os.system"),
    "tag-binary": with_field("description", "!!binary T2zDoQ=="),
    "tag-set": with_field("sources", "!!set {sess_1, sess_2}"),
    "tag-timestamp": with_field("created_at", "!!timestamp 2026-08-24T18:02:11Z"),
    "tag-str-on-number": with_field("occurrences", "!!str 1"),
    "tag-verbatim": with_field("type", "!<tag:yaml.org,2002:str> fact"),
    "tag-non-specific": with_field("type", "! fact"),
    "tag-local": with_field("type", "!fact fact"),
    "anchor-on-key": GOOD.replace("name: horario", "&k name: horario", 1),
    # timestamps in odd formats
    "timestamp-space": with_field("created_at", "2026-08-24 18:02:11"),
    "timestamp-offset": with_field("created_at", "2026-08-24T18:02:11+03:00"),
    "timestamp-fraction": with_field("created_at", "2026-08-24T18:02:11.123456Z"),
    "timestamp-date-only": with_field("created_at", "2026-08-24"),
    "timestamp-zero": with_field("created_at", "0000-00-00T00:00:00Z"),
    "timestamp-leap-second": with_field("updated_at", "2026-12-31T23:59:60Z"),
    "timestamp-feb-30": with_field("created_at", "2026-02-30T00:00:00Z"),
    "timestamp-epoch-int": with_field("created_at", "1787594531"),
    "timestamp-before-1970": with_field("created_at", "1969-12-31T23:59:59Z"),
    # encodings and characters
    "utf16-with-bom": GOOD.encode("utf-16"),
    "bom-in-the-middle": GOOD.replace("type: fact", "type: \ufefffact"),
    "lone-surrogate-description": with_field("description", "O atendimento \ud800 funciona"),
    "lone-surrogate-body": GOOD.replace("Chat", "\udfffChat"),
    "escaped-surrogate": with_field("description", '"O atendimento \\ud800 funciona"'),
    "nul-in-frontmatter": with_field("description", "O atendimento\x00 funciona"),
    "nul-in-body": GOOD.replace("Chat", "Chat\x00"),
    "escaped-nul": with_field("description", '"O atendimento \\0 funciona"'),
    "escape-character": with_field("description", '"O atendimento \\e[31m funciona"'),
    "line-separator": with_field("description", "O atendimento\u2028funciona"),
    "lone-cr-frontmatter": GOOD.replace("\n", "\r", 3),
    "crlf-mixed-with-cr": GOOD.replace("\n", "\r\n", 4).replace("provenance: observed\n", "provenance: observed\r"),
    "huge-line-over-limit": GOOD.replace("Chat", "x" * (DOCUMENT_MAX_BYTES + 10)),
    "huge-body-line": GOOD.replace("Chat", "x" * 100_000),
    "huge-description": with_field("description", "a" * 200_000),
    "many-keys": with_lines("\n".join(f"extra{i}: {i}" for i in range(20_000))),
    "too-many-sources": with_field("sources", "[" + ", ".join(f'"s{i}"' for i in range(6000)) + "]"),
    # keys
    "key-is-a-list": with_lines("[a, b]: c"),
    "key-is-a-map": with_lines("{a: b}: c"),
    "complex-key-list": with_lines("? [a, b]\n: c"),
    "null-key": with_lines("~: c"),
    "empty-key": with_lines(": c"),
    "int-key": with_lines("1: c"),
    "bool-key": with_lines("yes: c"),
    "long-key": with_lines("k" * 20_000 + ": c"),
    "quoted-control-key": with_lines('"\\x07bell": c'),
    # field types
    "name-int": with_field("name", "123"),
    "name-list": with_field("name", "[a, b]"),
    "name-multiline": with_field("name", '"horario\\natendimento"'),
    "description-list": with_field("description", "[a, b]"),
    "description-null": with_field("description", "~"),
    "type-map": with_field("type", "{fact: 1}"),
    "sources-ints": with_field("sources", "[1, 2]"),
    "sources-null-item": with_field("sources", "[~]"),
    "sources-bool-item": with_field("sources", "[yes]"),
    "sources-text": with_field("sources", "sess_1"),
    "sources-huge-int-item": with_field("sources", f"[{HUGE_INT}]"),
    # the document's shape
    "empty": "",
    "only-dashes": "---\n---\n",
    "frontmatter-list": "---\n- a\n- b\n---\n\nbody\n",
    "frontmatter-scalar": "---\njust text\n---\n\nbody\n",
    "no-closing-dashes": GOOD.replace("\n---\n\n", "\n\n", 1),
    "no-frontmatter": "# Horário\n\nChat e telefone.\n",
    "two-documents": with_lines("...\n--- \nname: outro"),
    "yaml-directive": with_lines("%YAML 1.1"),
    "tab-indented": with_lines("extra:\n\t- a"),
    "body-only-whitespace": GOOD.split("---\n\n")[0] + "---\n\n   \n\t\n",
}


def doc_id(case):
    return case
