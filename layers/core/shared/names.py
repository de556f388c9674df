"""Slugs: the only strings that ever become part of an object key."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator, Field

from .errors import InvalidName

SLUG_MAX = 64
# A model reference as configs and settings write it: bedrock:<model-id> or openai:<model-name>.
MODEL_REF = re.compile(r"(bedrock|openai):([A-Za-z0-9][A-Za-z0-9._:/@+-]{0,199})")
_SLUG = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
SLUG_SCHEMA = {"pattern": "^[a-z0-9]+(-[a-z0-9]+)*$", "maxLength": SLUG_MAX}
# Session ids are engine-issued opaque tokens; they are stored in `sources`, never in a key.
SESSION_ID_MAX = 128
_SESSION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]*")


def is_slug(value: object) -> bool:
    return isinstance(value, str) and len(value) <= SLUG_MAX and _SLUG.fullmatch(value) is not None


def slug_problem(value: object) -> str | None:
    """Why `value` is not a slug, or None when it is one."""
    if not isinstance(value, str):
        return "must be a string"
    if not value:
        return "must not be empty"
    if len(value) > SLUG_MAX:
        return f"must be at most {SLUG_MAX} characters"
    if _SLUG.fullmatch(value) is None:
        return "must be lowercase letters, digits and single hyphens (no leading, trailing or double hyphen)"
    return None


def check_slug(field: str, value: object) -> str:
    """Return `value` when it is a slug; raise InvalidName naming `field` otherwise."""
    problem = slug_problem(value)
    if problem:
        raise InvalidName(field, problem)
    return value  # type: ignore[return-value]


def is_session_id(value: object) -> bool:
    return (
        isinstance(value, str)
        and 0 < len(value) <= SESSION_ID_MAX
        and _SESSION_ID.fullmatch(value) is not None
    )


def _valid_slug(value: str) -> str:
    problem = slug_problem(value)
    if problem:
        raise ValueError(problem)
    return value


# The field types every message and request uses for names that may reach an object key.
Slug = Annotated[str, AfterValidator(_valid_slug), Field(json_schema_extra=SLUG_SCHEMA)]
SessionId = Annotated[str, Field(min_length=1, max_length=SESSION_ID_MAX, pattern=r"^[A-Za-z0-9][A-Za-z0-9._:-]*$")]
