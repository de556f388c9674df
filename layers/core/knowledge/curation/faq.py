"""An FAQ as a store keeps it (CSV or YAML rows of question and answer) read as concept documents,
each row with the line it starts on. The mapping is the contract's (docs/contract.md, "Import"):

    name         the row's `name`, else the question slugged: accents dropped, lowercase, every run of
                 other characters one hyphen; over 64 characters, cut at a hyphen to at most 57 and ended
                 with '-' and the first 6 hex digits of the whole slug's SHA-256
    description  the row's `description`, else the question on one line (cut at a word to 300 characters)
    type         the row's `type`, else the import's (fact by default)
    body         the answer, its line endings made \\n and its ends trimmed

Pure: no store, no AWS. A row that cannot become a document is a RowProblem, never an exception.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
import unicodedata
from dataclasses import dataclass

import yaml

from knowledge.format.concept import DESCRIPTION_MAX
from shared.names import SLUG_MAX
from shared.validation import YamlProblem, read_yaml

COLUMNS = ("question", "answer", "name", "description", "type")
REQUIRED = ("question", "answer")
ROWS_MAX = 10_000
ELLIPSIS = "…"
CUT_DIGEST = 6  # hex digits that end a name cut to SLUG_MAX
_OTHER = re.compile(r"[^a-z0-9]+")
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class Row:
    """One FAQ row as a concept document (without the engine's fields: the import adds them)."""

    line: int
    markdown: str


@dataclass(frozen=True)
class RowProblem:
    line: int | None
    reason: str


Read = Row | RowProblem


def slug_of(text: str) -> str:
    """A question as a concept name: '' when it holds no letter or digit."""
    folded = "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c)).lower()
    slug = _OTHER.sub("-", folded).strip("-")
    if len(slug) <= SLUG_MAX:
        return slug
    # Cut at a hyphen, then told apart by a digest of the whole: long questions that start alike
    # ("Posso devolver um produto … no aplicativo?", "… na loja física?") keep names of their own.
    digest = hashlib.sha256(slug.encode()).hexdigest()[:CUT_DIGEST]
    head = slug[:SLUG_MAX - CUT_DIGEST]
    head = head[:head.rfind("-")] if "-" in head else head[:-1]
    return f"{head.strip('-')}-{digest}"


def one_line(text: str) -> str:
    """A question as a description: one line, at most DESCRIPTION_MAX characters (cut at a word)."""
    line = _SPACE.sub(" ", text).strip()
    if len(line) <= DESCRIPTION_MAX:
        return line
    cut = line[:DESCRIPTION_MAX - 1]
    return (cut[:cut.rfind(" ")] if " " in cut else cut).rstrip() + ELLIPSIS


def row_document(fields: dict[str, str], line: int, default_type: str) -> Read:
    """A row's fields (already text) as a concept document, or what is wrong with the row."""
    question = (fields.get("question") or "").strip()
    answer = (fields.get("answer") or "").replace("\r\n", "\n").replace("\r", "\n").strip()
    if not question:
        return RowProblem(line, "question: must not be empty")
    if not answer:
        return RowProblem(line, "answer: must not be empty")
    name = (fields.get("name") or "").strip() or slug_of(question)
    if not name:
        return RowProblem(line, "name: the question has no letter or digit to name the concept from "
                                "(give the row a name)")
    description = one_line((fields.get("description") or "").strip() or question)
    kind = (fields.get("type") or "").strip() or default_type
    # JSON text is a YAML double-quoted scalar: whatever a cell holds reads back as that text.
    head = [f"{field}: {json.dumps(value, ensure_ascii=False)}"
            for field, value in (("name", name), ("description", description), ("type", kind))]
    return Row(line, "---\n" + "\n".join(head) + "\n---\n\n" + answer + "\n")


class FaqUnreadable(ValueError):
    """The whole file cannot be read as an FAQ (not UTF-8, no header, not a list of rows)."""


def read_faq(data: bytes, kind: str, default_type: str = "fact") -> list[Read]:
    """The rows of an FAQ file (`kind` "csv" or "yaml"), in order; FaqUnreadable when there are none to read."""
    try:
        text = data.decode("utf-8").lstrip("\ufeff")
    except UnicodeDecodeError as exc:
        raise FaqUnreadable(f"is not UTF-8 text (byte {exc.start}): save it as UTF-8") from None
    rows = _csv_rows(text) if kind == "csv" else _yaml_rows(text)
    if len(rows) > ROWS_MAX:
        raise FaqUnreadable(f"holds {len(rows)} rows; an import takes at most {ROWS_MAX}")
    return [row if isinstance(row, RowProblem) else row_document(row[1], row[0], default_type) for row in rows]


def _columns(names: list[str]) -> list[str]:
    return [name.strip().lower() for name in names]


def _csv_rows(text: str) -> list:
    # The csv module refuses a field over 128 KB and cannot go on after it: an answer that long is
    # read, then refused by the body's own limit with its line, and the rows after it are read.
    if csv.field_size_limit() < len(text):
        csv.field_size_limit(min(len(text) + 1, 2**31 - 1))
    lines = text.split("\n", 1)
    first = lines[0]
    delimiter = ";" if first.count(";") > first.count(",") else ","
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    try:
        header = _columns(next(reader))
    except StopIteration:
        raise FaqUnreadable("is empty: the first line names the columns (question, answer)") from None
    except csv.Error as exc:
        raise FaqUnreadable(f"line 1: {exc}") from None
    missing = [column for column in REQUIRED if column not in header]
    if missing:
        raise FaqUnreadable(f"line 1 must name the columns {', '.join(REQUIRED)} (missing: {', '.join(missing)})")
    unknown = [column for column in header if column and column not in COLUMNS]
    if unknown:
        raise FaqUnreadable(f"line 1: unknown column {unknown[0]!r} (columns: {', '.join(COLUMNS)})")
    out: list = []
    start = reader.line_num + 1
    while True:
        try:
            cells = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            out.append(RowProblem(start, f"is not a CSV row: {exc}"))
            break
        if any(cell.strip() for cell in cells):
            if len(cells) > len(header):
                out.append(RowProblem(start, f"has {len(cells)} cells for {len(header)} columns"))
            else:
                out.append((start, {column: cell for column, cell in zip(header, cells) if column}))
        start = reader.line_num + 1
    return out


def _yaml_rows(text: str) -> list:
    try:
        data = read_yaml(text, max_depth=3, max_items=ROWS_MAX + 1, max_keys=len(COLUMNS) + 1).data
    except YamlProblem as exc:
        where = f"line {exc.line + 1}: " if exc.line is not None else ""
        raise FaqUnreadable(f"{where}{exc.message}") from None
    nested = isinstance(data, dict) and list(data) == ["faq"]
    rows = data["faq"] if nested else data
    if not isinstance(rows, list):
        raise FaqUnreadable("must be a list of rows (question:, answer:), or a `faq:` key holding one")
    lines = _item_lines(text, nested)
    out: list = []
    for number, item in enumerate(rows):
        line = lines[number] if number < len(lines) else None
        if not isinstance(item, dict):
            out.append(RowProblem(line, "must be a mapping of question:, answer: (and name:, description:, type:)"))
            continue
        unknown = [key for key in item if key not in COLUMNS]
        if unknown:
            out.append(RowProblem(line, f"{unknown[0][:40]!r} is not a column ({', '.join(COLUMNS)})"))
            continue
        wrong = [key for key, value in item.items() if value is not None and not isinstance(value, str)]
        if wrong:
            out.append(RowProblem(line, f"{wrong[0]}: must be text (quote it)"))
            continue
        out.append((line, {key: value or "" for key, value in item.items()}))
    return out


def _item_lines(text: str, nested: bool) -> list[int]:
    """The 1-based line each row of the list starts on (the text has been read safely already)."""
    depth, lines = 0, []
    rows_depth = 2 if nested else 1
    for event in yaml.parse(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
        if isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
            depth += 1
            if depth == rows_depth + 1:
                lines.append(event.start_mark.line + 1)
        elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
            depth -= 1
        elif isinstance(event, yaml.ScalarEvent) and depth == rows_depth:
            lines.append(event.start_mark.line + 1)
    return lines
