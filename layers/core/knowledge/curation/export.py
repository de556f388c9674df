"""Export: the storage format is the export format (md: each concept's file, and the agent's
vocabulary.yaml beside them when it has one), or one GraphML file of the links."""

from __future__ import annotations

import os
import re
import tempfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Literal, Optional, Protocol

from pydantic import ConfigDict, Field, field_validator

from knowledge.curation.scoped import ScopedRequest
from knowledge.errors import NothingToExport, SinkError
from knowledge.format.concept import format_timestamp, utc_now
from knowledge.format.vocabulary import FILE as VOCABULARY_FILE
from knowledge.store.concepts import ConceptStore, StoredConcept
from knowledge.store.keys import SHARED
from shared.errors import InvalidConcept, KnowledgeError, UnknownAgent
from shared.validation import validate_object

FORMATS = ("md", "graphml")
GRAPHML_FILE = "knowledge.graphml"
GRAPHML_NS = "http://graphml.graphdrawing.org/xmlns"
# (key id, attribute type) of the node data, in the order they are written.
NODE_DATA = (("name", "string"), ("type", "string"), ("description", "string"),
             ("confidence", "double"), ("provenance", "string"))
Progress = Callable[[int, int], None]


class Sink(Protocol):
    def write(self, name: str, data: bytes) -> None: ...


class DirectorySink:
    """Files in a local folder, each written atomically (a temporary file, then a rename)."""

    def __init__(self, root: str | os.PathLike[str]):
        self.root = Path(root)
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            probe = tempfile.NamedTemporaryFile(dir=self.root, prefix=".knowledge-", delete=True)
            probe.close()
        except OSError as exc:
            raise SinkError(f"cannot write to {self.root}: {exc.strerror or exc}") from None

    def write(self, name: str, data: bytes) -> None:
        target = self.root / name
        try:
            fd, tmp = tempfile.mkstemp(dir=self.root, prefix=".knowledge-")
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.replace(tmp, target)
        except OSError as exc:
            raise SinkError(f"cannot write {target}: {exc.strerror or exc}") from None


class S3Sink:
    """Objects under one prefix of a bucket (a Lambda container's disk is gone after the run)."""

    def __init__(self, s3: Any, bucket: str, prefix: str):
        self._s3, self.bucket, self.prefix = s3, bucket, prefix.rstrip("/") + "/"

    def write(self, name: str, data: bytes) -> None:
        content_type = ("application/xml" if name.endswith(".graphml") else "application/yaml; charset=utf-8"
                        if name.endswith(".yaml") else "text/markdown; charset=utf-8")
        self._s3.put_object(Bucket=self.bucket, Key=self.prefix + name, Body=data, ContentType=content_type)


@dataclass
class ExportResult:
    format: str
    concepts: int = 0
    files: list[str] = field(default_factory=list)
    edges: int = 0
    skipped: dict[str, str] = field(default_factory=dict)
    vocabulary: bool = False  # the agent's vocabulary.yaml was written beside the concepts
    waiting: int = 0  # pairs waiting beside the concepts for a judgment: not exported (they are not concepts)

    def summary(self) -> str:
        what = f"{self.concepts} concept{'s' if self.concepts != 1 else ''}"
        if self.format == "graphml":
            what += f" and {self.edges} link{'s' if self.edges != 1 else ''} to {GRAPHML_FILE}"
        else:
            count = len(self.files) - self.vocabulary
            what += f" as {count} .md file{'s' if count != 1 else ''}"
            what += f" and its {VOCABULARY_FILE}" if self.vocabulary else ""
        skipped = f"; skipped {len(self.skipped)} unreadable" if self.skipped else ""
        waiting = (f"; {self.waiting} waiting for a judgment beside them not exported (not concepts: judge them in "
                   "the studio)") if self.waiting else ""
        return f"exported {what}{skipped}{waiting}"

    def as_dict(self) -> dict[str, Any]:
        return {"format": self.format, "concepts": self.concepts, "files": self.files,
                "edges": self.edges, "skipped": self.skipped, "vocabulary": self.vocabulary, "waiting": self.waiting}


def export_agent(
    store: ConceptStore, tenant: str, agent: str, sink: Sink, *, fmt: str = "md",
    progress: Optional[Progress] = None,
) -> ExportResult:
    """Export every current concept of an agent to `sink` (md: and its vocabulary.yaml, as stored)."""
    if fmt not in FORMATS:
        raise KnowledgeError(f"format must be one of {', '.join(FORMATS)}")
    names = [entry.name for entry in store.list(tenant, agent)]
    if not names:
        if not store.agent_exists(tenant, agent):
            raise UnknownAgent(f"agent {agent!r} of tenant {tenant!r} has no knowledge store")
        raise NothingToExport(f"agent {agent!r} of tenant {tenant!r} has no concepts to export")
    stored = [item for item in store.fetch_many(tenant, agent, names) if item is not None]
    result = ExportResult(fmt)
    if agent != SHARED:  # a shared concept's pairs wait in the agents that set them aside
        result.waiting = sum(store.waiting().counts(tenant, agent).values())
    if fmt == "md":
        for done, item in enumerate(sorted(stored, key=lambda s: s.name), start=1):
            problem = unreadable(item)
            if problem:
                result.skipped[item.name] = problem
            else:
                sink.write(f"{item.name}.md", item.data)
                result.files.append(f"{item.name}.md")
            if progress:
                progress(done, len(stored))
        result.concepts = len(result.files)
        # The shared scope has no vocabulary.yaml (each agent keeps its own): nothing to read there.
        vocabulary = None if agent == SHARED else store.get_vocabulary(tenant, agent)
        if vocabulary is not None:
            sink.write(VOCABULARY_FILE, vocabulary.data)
            result.files.append(VOCABULARY_FILE)
            result.vocabulary = True
        return result
    document, result.edges, result.skipped = graphml(stored, progress=progress)
    sink.write(GRAPHML_FILE, document)
    result.files.append(GRAPHML_FILE)
    result.concepts = len(stored) - len(result.skipped)
    return result


def unreadable(item: StoredConcept) -> Optional[str]:
    """Why a stored concept cannot be exported (it does not parse), or None when it can."""
    try:
        item.concept
    except InvalidConcept as exc:
        return str(exc)
    return None


def graphml(stored: list[StoredConcept], progress: Optional[Progress] = None) -> tuple[bytes, int, dict[str, str]]:
    """A GraphML document: a node per concept, an edge per [[link]] that resolves inside it."""
    ET.register_namespace("", GRAPHML_NS)
    q = lambda tag: f"{{{GRAPHML_NS}}}{tag}"  # noqa: E731
    root = ET.Element(q("graphml"))
    for key, kind in NODE_DATA:
        ET.SubElement(root, q("key"), {"id": key, "for": "node", "attr.name": key, "attr.type": kind})
    graph = ET.SubElement(root, q("graph"), {"id": "knowledge", "edgedefault": "directed"})

    concepts, skipped = {}, {}
    for done, item in enumerate(sorted(stored, key=lambda s: s.name), start=1):
        problem = unreadable(item)
        if problem:
            skipped[item.name] = problem
        else:
            concepts[item.name] = item.concept
        if progress:
            progress(done, len(stored))
    for name, concept in concepts.items():
        node = ET.SubElement(graph, q("node"), {"id": name})
        values = {"name": name, "type": concept.type, "description": concept.description,
                  "confidence": repr(concept.confidence), "provenance": concept.provenance}
        for key, _ in NODE_DATA:
            ET.SubElement(node, q("data"), {"key": key}).text = values[key]
    edges = 0
    for name, concept in concepts.items():
        for target in concept.links:
            # A link outside the export is dropped, never a dangling edge; a self-link says nothing.
            if target in concepts and target != name:
                ET.SubElement(graph, q("edge"), {"id": f"e{edges}", "source": name, "target": target})
                edges += 1
    ET.indent(root)
    return ET.tostring(root, encoding="utf-8", xml_declaration=True) + b"\n", edges, skipped


# ------------------------------------------------------------ the Lambda request

_LABEL = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,99}(/[A-Za-z0-9_-][A-Za-z0-9._-]{0,99}){0,4}")


class ExportRequest(ScopedRequest):
    """The ExportFunction event: which agent (or the tenant's shared concepts), which format, and a
    label for the output prefix."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    format: Literal["md", "graphml"] = "md"
    label: Optional[str] = Field(default=None, description="output folder under exports/; default: a timestamp")


    @field_validator("label")
    @classmethod
    def _label(cls, value: Optional[str]) -> Optional[str]:
        if value is not None and (not _LABEL.fullmatch(value) or ".." in value.split("/")):
            raise ValueError("must be folder names of letters, digits, '.', '_', '-' joined by '/'")
        return value

    def prefix(self, now: Optional[str] = None) -> str:
        """Where in SESSIONS_BUCKET the export goes: {tenant}/{agent}/exports/{label}/ (the shared
        concepts': {tenant}/_shared/exports/{label}/)."""
        label = self.label or (now or format_timestamp(utc_now())).replace(":", "")
        return f"{self.tenant}/{self.folder}/exports/{label}/"


def parse_export_request(event: Any) -> ExportRequest:
    return validate_object(ExportRequest, event, KnowledgeError, "the export event")


class Exporter:
    """ExportFunction's service: one request, parsed, written under its prefix of the sessions bucket."""

    def __init__(self, store: ConceptStore, s3: Any, bucket: str):
        self._store, self._s3, self.bucket = store, s3, bucket

    def run(self, event: Any) -> tuple[ExportRequest, str, ExportResult]:
        request = parse_export_request(event)
        prefix = request.prefix()
        result = export_agent(self._store, request.tenant, request.scope, S3Sink(self._s3, self.bucket, prefix),
                              fmt=request.format)
        return request, prefix, result
