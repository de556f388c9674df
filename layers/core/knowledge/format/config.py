"""The agent's config file (knowledge.yaml): its `knowledge:` and `distill:` blocks, pack data that
switch each loop on and tune it. Each block is optional; an absent block turns its loop off.

The file is one document shared by both loops, so it is read and validated whole here (a bad
`distill:` block is refused at save time like a bad `knowledge:` one); the Facts package reads
its block through `parse_agent_config`, and this module never imports Facts.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from datetime import timedelta
from typing import Literal, Optional, Union

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from knowledge.format.concept import DEFAULT_STALE_AFTER_DAYS, TYPES
from shared.errors import InvalidConfig, YamlProblem
from shared.language import LANGUAGE
from shared.names import MODEL_REF
from shared.validation import describe_errors, read_yaml

logger = logging.getLogger(__name__)

ConceptType = Literal["fact", "entity", "procedure", "policy", "objection"]
CONFIG_MAX_BYTES = 32 * 1024
PROMPT_MAX = 4000
DEFAULT_MIN_SCORE = 1.0
CONTACTS_MAX, CONTACT_MAX = 20, 200
# knowledge: -> a setting -> a list of words; nothing in the block nests deeper or runs longer.
_CONFIG_DEPTH = 3
_CONFIG_ITEMS = 64
_CONFIG_KEYS = 32
_OFFSET = re.compile(r"[+-](?:0\d|1[0-4]):[0-5]\d")


def _language_code(value: Optional[str]) -> Optional[str]:
    if value is not None and not LANGUAGE.fullmatch(value):
        raise ValueError('must be a language code such as "pt", "pt-BR" or "en"')
    return value


def _model_ref(value: Optional[str]) -> Optional[str]:
    if value is not None and not MODEL_REF.fullmatch(value):
        raise ValueError("must be written bedrock:<model-id> or openai:<model-name>")
    return value


class KnowledgeConfig(BaseModel):
    """The `knowledge:` block. A present block with no keys turns extraction and retrieval on."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    @field_validator("min_score", mode="before")
    @classmethod
    def _number(cls, value: object) -> object:
        # strict mode refuses an int for a float; a whole number is still a number here
        return float(value) if isinstance(value, int) and not isinstance(value, bool) else value

    extract: bool = True
    retrieve: bool = True
    types: tuple[ConceptType, ...] = Field(default=TYPES, min_length=1)
    top_k: int = Field(default=5, ge=1, le=50)
    prompt: Optional[str] = Field(default=None, max_length=PROMPT_MAX)
    model: Optional[str] = None
    index: Literal["scan", "fts5"] = "scan"
    # BM25 score a concept needs to be injected: keeps "oi, tudo bem?" from injecting anything.
    min_score: float = Field(default=DEFAULT_MIN_SCORE, ge=0, le=100)
    # The e-mail, phones, addresses and CNPJ the store publishes: business data, kept by the PII gate.
    published_contacts: tuple[str, ...] = Field(default=(), max_length=CONTACTS_MAX)
    # Days an observed concept stays recalled with no new sighting and no operator's save (0: always).
    stale_after_days: int = Field(default=DEFAULT_STALE_AFTER_DAYS, ge=0, le=36500)
    # The store's offset from UTC: a concept's valid_from / valid_until are local dates there.
    utc_offset: str = "+00:00"
    # The language concepts are written in ("pt", "pt-BR", "en"…); None: the conversation's.
    language: Optional[str] = None
    # Learning the customers' words for a concept from traffic (docs/contract.md, learned words):
    # the signals read ([]: none), and the distinct sessions a word needs to become a learned word.
    # `model` is in the default: a knowledge.yaml that does not write `learn_from` has every concept that
    # enters taught by the model where one is configured (none: nothing is asked); one that writes it keeps
    # its list exactly, so a config of an earlier release that listed [loaded, sighting] stays without it.
    learn_from: tuple[Literal["loaded", "sighting", "model"], ...] = ("loaded", "sighting", "model")
    learn_min_sessions: int = Field(default=3, ge=2, le=1000)
    # Recall the tenant's shared concepts as if they were the agent's own (its own of a name wins).
    shared: bool = False

    @field_validator("learn_from", mode="before")
    @classmethod
    def _signals(cls, value: object) -> object:
        if isinstance(value, list):
            if all(isinstance(v, str) for v in value) and len(set(value)) != len(value):
                raise ValueError("must not repeat a signal")
            return tuple(value)
        return value

    @field_validator("language")
    @classmethod
    def _language(cls, value: Optional[str]) -> Optional[str]:
        return _language_code(value)

    @field_validator("utc_offset", mode="before")
    @classmethod
    def _offset(cls, value: object) -> object:
        if not isinstance(value, str) or not _OFFSET.fullmatch(value):
            raise ValueError('must be an offset from UTC written like "-03:00" (quoted, from -14:00 to +14:00)')
        return value

    @property
    def offset(self) -> timedelta:
        """`utc_offset` as a timedelta."""
        sign = -1 if self.utc_offset[0] == "-" else 1
        return sign * timedelta(hours=int(self.utc_offset[1:3]), minutes=int(self.utc_offset[4:6]))

    @field_validator("published_contacts", mode="before")
    @classmethod
    def _contacts(cls, value: object) -> object:
        if isinstance(value, list):
            if not all(isinstance(v, str) and 0 < len(v.strip()) <= CONTACT_MAX and "\n" not in v for v in value):
                raise ValueError(f"must be a list of one-line texts of at most {CONTACT_MAX} characters")
            return tuple(v.strip() for v in value)
        return value

    @field_validator("types", mode="before")
    @classmethod
    def _types_list(cls, value: object) -> object:
        if isinstance(value, list):
            if all(isinstance(v, str) for v in value) and len(set(value)) != len(value):
                raise ValueError("must not repeat a type")
            return tuple(value)
        return value

    @field_validator("model")
    @classmethod
    def _model_ref(cls, value: Optional[str]) -> Optional[str]:
        return _model_ref(value)

    @property
    def effective_index(self) -> Literal["scan"]:
        """The index actually used: fts5 is accepted but not built, so it falls back to scan."""
        return "scan"


IDLE_HOURS_MAX = 24 * 30  # a session idle longer than this has long left the archive's window


class DistillConfig(BaseModel):
    """The `distill:` block (Facts). A present block with no keys turns distillation on."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    enabled: bool = True
    # Hours nobody has written to a session before it is distilled; a fraction is allowed (a demo).
    idle_hours: Union[int, float] = Field(default=6, gt=0, le=IDLE_HOURS_MAX)
    min_messages: int = Field(default=3, ge=1, le=10_000)
    max_proposals: int = Field(default=10, ge=1, le=50)
    prompt: Optional[str] = Field(default=None, max_length=PROMPT_MAX)
    model: Optional[str] = None
    # The language facts are written in; None: the conversation's.
    language: Optional[str] = None

    @field_validator("language")
    @classmethod
    def _language(cls, value: Optional[str]) -> Optional[str]:
        return _language_code(value)

    @field_validator("idle_hours", mode="before")
    @classmethod
    def _hours(cls, value: object) -> object:
        # bool is an int to Python; a YAML `true` is not a number of hours. inf and nan are refused by the bounds.
        if isinstance(value, bool):
            raise ValueError("must be a number of hours")
        return value

    @field_validator("model")
    @classmethod
    def _model_ref(cls, value: Optional[str]) -> Optional[str]:
        return _model_ref(value)


@dataclass(frozen=True)
class AgentConfig:
    """Both blocks of the agent's config file; None where a block is absent (that loop is off)."""

    knowledge: Optional[KnowledgeConfig] = None
    distill: Optional[DistillConfig] = None


_BLOCKS = ("knowledge", "distill")


def parse_config(document: str | bytes | None) -> Optional[KnowledgeConfig]:
    """Parse knowledge.yaml. None (feature off) when the document or its `knowledge:` key is absent.

    The whole file is validated, `distill:` included. Raises InvalidConfig, and nothing else,
    for any other input.
    """
    return parse_agent_config(document).knowledge


def parse_agent_config(document: str | bytes | None) -> AgentConfig:
    """Parse knowledge.yaml into both of its blocks, each None when absent.

    Raises InvalidConfig, and nothing else, for any input that is not a valid file.
    """
    if document is None:
        return AgentConfig()
    if not isinstance(document, (str, bytes)):
        raise InvalidConfig("knowledge.yaml must be text")
    if len(document) > CONFIG_MAX_BYTES or (
            isinstance(document, str) and len(document.encode("utf-8", "surrogatepass")) > CONFIG_MAX_BYTES):
        raise InvalidConfig(f"knowledge.yaml must be at most {CONFIG_MAX_BYTES} bytes")
    if isinstance(document, bytes):
        try:
            document = document.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidConfig(f"knowledge.yaml is not UTF-8 text (byte {exc.start})") from None
    try:
        data = read_yaml(document, max_depth=_CONFIG_DEPTH, max_items=_CONFIG_ITEMS, max_keys=_CONFIG_KEYS).data
    except YamlProblem as exc:
        where = f" line {exc.line + 1}" if exc.line is not None else ""
        raise InvalidConfig(f"knowledge.yaml{where}: {exc.message}") from None
    if data is None:
        return AgentConfig()
    if not isinstance(data, dict):
        raise InvalidConfig("knowledge.yaml must be a mapping of blocks (`knowledge:`, `distill:`)")
    unknown = [key for key in data if key not in _BLOCKS]
    if unknown:
        raise InvalidConfig(f"knowledge.yaml: {unknown[0][:64]}: unknown top-level key "
                            "(the file holds `knowledge:` and `distill:`)")
    knowledge = _block(data, "knowledge", KnowledgeConfig)
    distill = _block(data, "distill", DistillConfig)
    if knowledge is not None and knowledge.index == "fts5":
        logger.warning("knowledge index fts5 is not built yet; falling back to scan")
    return AgentConfig(knowledge, distill)


def _block(data: dict, name: str, model: type[BaseModel]):
    block = data.get(name)
    if block is None:
        return None
    if not isinstance(block, dict):
        raise InvalidConfig(f"{name}: must be a mapping of settings")
    try:
        return model.model_validate(block)
    except ValidationError as exc:
        raise InvalidConfig("; ".join(describe_errors(exc, prefix=f"{name}."))) from None


def render_config(config: KnowledgeConfig) -> str:
    """knowledge.yaml text for a config (keys that differ from the defaults are written out)."""
    block = config.model_dump(mode="json", exclude_defaults=False, exclude_none=True)
    block["types"] = list(config.types)
    return yaml.safe_dump({"knowledge": block}, sort_keys=False, allow_unicode=True)



def render_agent_config(config: AgentConfig) -> str:
    """knowledge.yaml text holding each present block (every key written out)."""
    out: dict = {}
    if config.knowledge is not None:
        out.update(yaml.safe_load(render_config(config.knowledge)))
    if config.distill is not None:
        out["distill"] = config.distill.model_dump(mode="json", exclude_none=True)
    return yaml.safe_dump(out, sort_keys=False, allow_unicode=True) if out else ""
