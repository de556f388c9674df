"""An agent's `knowledge:` block: pack data that switches the feature on and tunes it."""

from __future__ import annotations

import logging
from typing import Literal, Optional

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .concept import TYPES
from .errors import InvalidConfig
from .model import MODEL_REF
from .validation import describe_errors

logger = logging.getLogger(__name__)

ConceptType = Literal["fact", "entity", "procedure", "policy", "objection"]
CONFIG_MAX_BYTES = 32 * 1024
PROMPT_MAX = 4000
DEFAULT_MIN_SCORE = 1.0


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
            if len(set(value)) != len(value):
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
    """Parse knowledge.yaml. None (feature off) when the document or its `knowledge:` key is absent."""
    if document is None:
        return None
    if len(document) > CONFIG_MAX_BYTES:
        raise InvalidConfig(f"knowledge.yaml must be at most {CONFIG_MAX_BYTES} bytes")
    try:
        data = yaml.safe_load(document)
    except yaml.MarkedYAMLError as exc:
        line = exc.problem_mark.line + 1 if exc.problem_mark else "?"
        raise InvalidConfig(f"knowledge.yaml line {line}: invalid YAML: {exc.problem}") from None
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise InvalidConfig(f"knowledge.yaml: invalid YAML: {exc}") from None
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

