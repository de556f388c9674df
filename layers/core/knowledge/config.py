"""An agent's `knowledge:` block: pack data that switches the feature on and tunes it."""

from __future__ import annotations

import logging
from typing import Literal, Optional

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .concept import TYPES
from .errors import InvalidConfig
from .model import MODEL_REF
from .validation import YamlProblem, describe_errors, read_yaml

logger = logging.getLogger(__name__)

ConceptType = Literal["fact", "entity", "procedure", "policy", "objection"]
CONFIG_MAX_BYTES = 32 * 1024
PROMPT_MAX = 4000
DEFAULT_MIN_SCORE = 1.0
# knowledge: -> a setting -> a list of words; nothing in the block nests deeper or runs longer.
_CONFIG_DEPTH = 3
_CONFIG_ITEMS = 64
_CONFIG_KEYS = 32


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
        if value is not None and not MODEL_REF.fullmatch(value):
            raise ValueError("must be written bedrock:<model-id> or openai:<model-name>")
        return value

    @property
    def effective_index(self) -> Literal["scan"]:
        """The index actually used: fts5 is accepted but not built, so it falls back to scan."""
        return "scan"


def parse_config(document: str | bytes | None) -> Optional[KnowledgeConfig]:
    """Parse knowledge.yaml. None (feature off) when the document or its `knowledge:` key is absent.

    Raises InvalidConfig, and nothing else, for any other input.
    """
    if document is None:
        return None
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
        return None
    if not isinstance(data, dict) or set(data) - {"knowledge"}:
        raise InvalidConfig("knowledge.yaml must hold exactly one top-level key, `knowledge:`")
    block = data.get("knowledge")
    if block is None:
        return None
    if not isinstance(block, dict):
        raise InvalidConfig("knowledge: must be a mapping of settings")
    try:
        config = KnowledgeConfig.model_validate(block)
    except ValidationError as exc:
        raise InvalidConfig("; ".join(describe_errors(exc, prefix="knowledge."))) from None
    if config.index == "fts5":
        logger.warning("knowledge index fts5 is not built yet; falling back to scan")
    return config


def render_config(config: KnowledgeConfig) -> str:
    """knowledge.yaml text for a config (keys that differ from the defaults are written out)."""
    block = config.model_dump(mode="json", exclude_defaults=False, exclude_none=True)
    block["types"] = list(config.types)
    return yaml.safe_dump({"knowledge": block}, sort_keys=False, allow_unicode=True)

