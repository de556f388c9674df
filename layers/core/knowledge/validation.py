"""Readable pydantic errors that never quote the input (it may be a customer's message)."""

from __future__ import annotations

import re
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

M = TypeVar("M", bound=BaseModel)

_FENCE = re.compile(r"\A```(?:json|JSON)?[ \t]*\n(.*)\n```\Z", re.DOTALL)


def unfence(answer: str) -> str:
    """A model's answer without one enclosing ```json fence (nothing looser is tolerated)."""
    text = answer.strip()
    fenced = _FENCE.match(text)
    return fenced.group(1).strip() if fenced else text


def describe_errors(exc: ValidationError, prefix: str = "") -> list[str]:
    """`field.path: problem` for each error; pydantic's `msg` describes the rule, not the input."""
    out = []
    for error in exc.errors(include_input=False, include_url=False):
        path = ".".join(str(part) for part in error.get("loc", ()))
        where = prefix + path if path else prefix.rstrip(".") or ""
        if error.get("type") == "extra_forbidden":
            out.append(f"{where}: unknown key")
            continue
        message = str(error.get("msg", "invalid value")).removeprefix("Value error, ")
        field = str(error.get("loc", ("",))[-1]) if error.get("loc") else ""
        message = message.removeprefix(f"{field}: ") if field else message
        out.append(f"{where}: {message}" if where else message)
    return out


def validate_object(model: type[M], data: Any, error: type[Exception], what: str) -> M:
    """`data` (a decoded JSON object) as `model`, or `error` naming every problem, never the input."""
    if not isinstance(data, dict):
        raise error(f"{what} must be a JSON object")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise error("; ".join(describe_errors(exc))) from None
