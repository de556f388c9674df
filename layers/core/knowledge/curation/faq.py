"""An FAQ as a store keeps it (CSV or YAML rows of question and answer) read as concept documents, each
row with the line it starts on and the document an earlier import made of it (so the import brings
that concept up to date). Pure: no store, no AWS; a row that cannot become a document is a
RowProblem, never an exception. docs/contract.md, "Import" ("An FAQ": the encodings, the separators,
each row's name, description, type and body)."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
import unicodedata
from dataclasses import dataclass

import yaml

from knowledge.errors import FaqUnreadable
from knowledge.format.concept import DESCRIPTION_MAX
from shared.names import SLUG_MAX
from shared.errors import YamlProblem
from shared.validation import read_yaml

COLUMNS = ("question", "answer", "name", "description", "type")
REQUIRED = ("question", "answer")
ROWS_MAX = 10_000
ELLIPSIS = "…"
CUT_DIGEST = 6  # hex digits that end a name cut to SLUG_MAX
SEPARATORS = {",": "','", ";": "';'", "\t": "a tab"}
SHORT_SENTENCE = 3  # words: a first sentence shorter ("Sim.", "Não, infelizmente.") takes the next one with it
_OTHER = re.compile(r"[^a-z0-9]+")
_SPACE = re.compile(r"\s+")
# A sentence ends at . ! ? or … (closing quotes and brackets kept with it) before a space and a capital
# letter, an opening quote, or the end: "art. 49" and "R$ 1.299,90" go on.
_SENTENCE_END = re.compile(r"[.!?…]+[\"'”’»)\]]*(?= [\"'“‘«(\[]*[A-ZÀ-ÖØ-Þ]|$)")
# Words a period shortens rather than ends a sentence after ("o Sr. Silva", "a Av. Paulista").
_ABBREVIATIONS = frozenset("sr sra srta dr dra prof profa av art arts tel cel ref obs ex aprox pág pag cap n nº".split())
_EXCEL_SEPARATOR = re.compile(r"sep=(.)\r?")
# What a spreadsheet's text may hold besides the printable: tab and line ends. Anything else read from
# Windows-1252 means the file is not text in that encoding either (UTF-16, a binary file).
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_UTF8_LETTER = re.compile(rb"\xc3[\x80-\xbf]")


@dataclass(frozen=True)
class Row:
    """One FAQ row as a concept document (without the engine's fields: the import adds them); `legacy`
    is the document the row made before answers led the block."""

    line: int
    markdown: str
    legacy: str | None = None


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
    """Text as a description: one line, at most DESCRIPTION_MAX characters (cut at a word)."""
    line = _SPACE.sub(" ", text).strip()
    if len(line) <= DESCRIPTION_MAX:
        return line
    cut = line[:DESCRIPTION_MAX - 1]
    return (cut[:cut.rfind(" ")] if " " in cut else cut).rstrip() + ELLIPSIS


def first_sentence(answer: str) -> str:
    """An answer's first sentence as a description (one line, cut at a word to DESCRIPTION_MAX); a first
    sentence of fewer than SHORT_SENTENCE words ("Sim.") goes on to the next, which says what is true."""
    text = _SPACE.sub(" ", answer).strip()
    for end in _SENTENCE_END.finditer(text):
        head = text[:end.end()]
        before = head[:end.start()].rsplit(" ", 1)[-1].lower()
        if end.group() == "." and before in _ABBREVIATIONS:
            continue
        if len(head.split()) >= SHORT_SENTENCE:
            return one_line(head)
    return one_line(text)


def _document(name: str, description: str, kind: str, body: str) -> str:
    # JSON text is a YAML double-quoted scalar: whatever a cell holds reads back as that text.
    head = [f"{field}: {json.dumps(value, ensure_ascii=False)}"
            for field, value in (("name", name), ("description", description), ("type", kind))]
    return "---\n" + "\n".join(head) + "\n---\n\n" + body + "\n"


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
    given = (fields.get("description") or "").strip()
    kind = (fields.get("type") or "").strip() or default_type
    asked = _SPACE.sub(" ", question)
    return Row(line, _document(name, one_line(given) if given else first_sentence(answer), kind,
                               f"**{asked}**\n\n{answer}"),
               legacy=_document(name, one_line(given or question), kind, answer))


def read_faq(data: bytes, kind: str, default_type: str = "fact") -> list[Read]:
    """The rows of an FAQ file (`kind` "csv" or "yaml"), in order; FaqUnreadable when there are none to read."""
    text = _text(data)
    rows = _csv_rows(text) if kind == "csv" else _yaml_rows(text)
    if len(rows) > ROWS_MAX:
        raise FaqUnreadable(f"holds {len(rows)} rows; an import takes at most {ROWS_MAX}")
    return [row if isinstance(row, RowProblem) else row_document(row[1], row[0], default_type) for row in rows]


def _text(data: bytes) -> str:
    """A file's text: UTF-8, else Windows-1252 (what a Brazilian spreadsheet saves as "CSV"); refused as
    UTF-16 (a spreadsheet's "Unicode text") or as neither."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise FaqUnreadable("is UTF-16 text (a spreadsheet's \"Unicode text\"): save it as CSV UTF-8")
    try:
        text = data.decode("utf-8").lstrip("\ufeff")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        # UTF-8's mark, or its way of writing an accented letter (Ã followed by a sign is no Portuguese in
        # Windows-1252): UTF-8 text with a broken byte, which Windows-1252 would read as "Ã©" everywhere.
        if data.startswith(b"\xef\xbb\xbf") or _UTF8_LETTER.search(data):
            raise FaqUnreadable(f"is UTF-8 text with a byte that is not UTF-8 (byte {exc.start}): save it again as "
                                "CSV UTF-8", line) from None
        try:
            text = data.decode("cp1252")
        except UnicodeDecodeError:
            text = None
        if text is None or _CONTROL.search(text):
            raise FaqUnreadable(f"is neither UTF-8 nor Windows-1252 text (byte {exc.start}): save it as CSV UTF-8",
                                line) from None
        return text
    # The studio's page reads a file as UTF-8 and puts U+FFFD where a byte is not: the file was saved
    # in another encoding, and its accents are lost before it gets here.
    if "\ufffd" in text:
        line = text.count("\n", 0, text.index("\ufffd")) + 1
        raise FaqUnreadable("holds characters that are not UTF-8 (shown as �): the file is in another encoding, "
                            "likely Windows-1252; save it as CSV UTF-8, or import it with `knowledge import`, "
                            "which reads Windows-1252", line)
    return text


def _columns(names: list[str]) -> list[str]:
    return [name.strip().lower() for name in names]


def _separator(text: str) -> tuple[str, int]:
    """The CSV's separator and how many lines before its header say it (an Excel `sep=;` line)."""
    first = text.split("\n", 1)[0]
    hint = _EXCEL_SEPARATOR.fullmatch(first)
    if hint is not None and hint.group(1) in SEPARATORS:
        return hint.group(1), 1
    return max(SEPARATORS, key=first.count) if any(sep in first for sep in SEPARATORS) else ",", 0


def _header(reader, separator: str, skipped: int) -> list[str]:
    try:
        header = _columns(next(reader))
    except StopIteration:
        raise FaqUnreadable("is empty: the first line names the columns (question, answer)") from None
    except csv.Error as exc:
        raise FaqUnreadable(str(exc), skipped + 1) from None
    line = skipped + 1
    missing = [column for column in REQUIRED if column not in header]
    if missing:
        raise FaqUnreadable(f"must name the columns {', '.join(REQUIRED)} (missing: {', '.join(missing)}; "
                            f"read with {SEPARATORS[separator]} as the separator: a CSV's columns are "
                            f"separated by ',', ';' or a tab)", line)
    unknown = [column for column in header if column and column not in COLUMNS]
    if unknown:
        raise FaqUnreadable(f"unknown column {unknown[0]!r} (columns: {', '.join(COLUMNS)})", line)
    repeated = next((column for n, column in enumerate(header) if column and column in header[:n]), None)
    if repeated:
        raise FaqUnreadable(f"the column {repeated!r} is named twice: which one holds the row's {repeated}? "
                            "Remove or rename one", line)
    return header


def _csv_rows(text: str) -> list:
    # The csv module refuses a field over 128 KB and cannot go on after it: an answer that long is
    # read, then refused by the body's own limit with its line, and the rows after it are read.
    if csv.field_size_limit() < len(text):
        csv.field_size_limit(min(len(text) + 1, 2**31 - 1))
    separator, skipped = _separator(text)
    body = text.split("\n", 1)[1] if skipped and "\n" in text else ("" if skipped else text)
    # strict: a quote that does not pair is an error where it breaks, not every later row read into one
    # answer.
    reader = csv.reader(io.StringIO(body, newline=""), delimiter=separator, strict=True)
    header = _header(reader, separator, skipped)
    out: list = []
    start = skipped + reader.line_num + 1
    while True:
        try:
            cells = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            raise FaqUnreadable(f"a quoted field that opens in this row does not close where it should (read up to "
                                f"line {skipped + reader.line_num}: {exc}): a \" is missing, or one inside a "
                                "quoted field is not doubled (\"\"); nothing of the file is imported", start) from None
        if any(cell.strip() for cell in cells):
            if len(cells) > len(header):
                out.append(RowProblem(start, f"has {len(cells)} cells for {len(header)} columns"))
            else:
                out.append((start, {column: cell for column, cell in zip(header, cells) if column}))
        start = skipped + reader.line_num + 1
    return out


def _yaml_rows(text: str) -> list:
    try:
        data = read_yaml(text, max_depth=3, max_items=ROWS_MAX + 1, max_keys=len(COLUMNS) + 1).data
    except YamlProblem as exc:
        raise FaqUnreadable(exc.message, exc.line + 1 if exc.line is not None else None) from None
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
