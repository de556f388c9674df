"""Input validation shared by the readers: readable pydantic errors that never quote the input
(it may be a customer's message), and the strict YAML subset concepts and knowledge.yaml use."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Optional, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from shared.errors import YamlProblem

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


# ---------------------------------------------------------------- strict YAML

# Longer numbers are refused before conversion: int() of thousands of digits is slow or refused.
NUMBER_MAX_CHARS = 32
_YAML_BASE = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
# Lone surrogates cannot be handed to the YAML parser (it encodes to UTF-8 first); YAML also
# breaks lines at a lone CR, NEL, LS and PS, which editors do not show, so line numbers would lie.
_UNREADABLE = re.compile("[\ud800-\udfff\x85\u2028\u2029]|\r(?!\n)")


class _Loader(_YAML_BASE):  # type: ignore[misc, valid-type]
    """The safe resolver without timestamps: a timestamp stays text for the caller to check."""

    yaml_implicit_resolvers = {
        first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
        for first, resolvers in yaml.resolver.Resolver.yaml_implicit_resolvers.items()
    }


@dataclass(frozen=True)
class YamlDocument:
    """The one document of a YAML text, and the line (from 0) of each top-level key."""

    data: Any
    key_lines: dict[str, int]


@dataclass
class _Frame:
    container: Any
    key: Any = None  # the key whose value is being read (mappings only)
    waiting: bool = True  # a mapping expects a key next


_NO_VALUE = object()


def read_yaml(text: str, *, max_depth: int, max_items: int, max_keys: int = 64) -> YamlDocument:
    """The plain data of a YAML text, read from its event stream so nothing is ever expanded.

    Refused (YamlProblem): aliases and anchors, explicit tags, the `<<` merge key, duplicate
    or non-text keys, more than one document, collections nested deeper than `max_depth`,
    sequences longer than `max_items`, mappings with more than `max_keys` keys, numbers
    longer than NUMBER_MAX_CHARS. Timestamps stay text.
    """
    found = _UNREADABLE.search(text)
    if found:
        char = ord(found.group())
        why = "a lone surrogate" if 0xD800 <= char <= 0xDFFF else "lines must end with \\n"
        raise YamlProblem(f"is not valid text ({why}: U+{char:04X})", text.count("\n", 0, found.start()))
    loader = _Loader(text)
    try:
        return _read_events(loader, max_depth, max_items, max_keys)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        raise YamlProblem(f"invalid YAML: {exc.problem or exc.context or 'unreadable'}",
                          mark.line if mark is not None else None) from None
    except yaml.YAMLError as exc:
        raise YamlProblem(f"invalid YAML: {getattr(exc, 'reason', None) or type(exc).__name__}") from None
    finally:
        loader.dispose()


def _read_events(loader: Any, max_depth: int, max_items: int, max_keys: int) -> YamlDocument:
    loader.get_event()  # StreamStart
    if loader.check_event(yaml.StreamEndEvent):
        return YamlDocument(None, {})
    loader.get_event()  # DocumentStart
    stack: list[_Frame] = []
    key_lines: dict[str, int] = {}
    root: Any = _NO_VALUE

    def path() -> tuple[str, ...]:
        return tuple(str(len(f.container)) if isinstance(f.container, list) else str(f.key)
                     for f in stack if isinstance(f.container, list) or not f.waiting)

    def refuse(message: str, event: Any) -> YamlProblem:
        return YamlProblem(message, event.start_mark.line, path())

    while root is _NO_VALUE:
        event = loader.get_event()
        if isinstance(event, yaml.AliasEvent):
            raise refuse("YAML aliases (*name) are not allowed", event)
        if getattr(event, "anchor", None) is not None:
            raise refuse("YAML anchors (&name) are not allowed", event)
        if getattr(event, "tag", None) is not None:
            shown = str(event.tag).replace("tag:yaml.org,2002:", "!!")[:40]
            raise refuse(f"YAML tags ({shown}) are not allowed", event)
        parent = stack[-1] if stack else None
        if isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
            if parent is not None and isinstance(parent.container, dict) and parent.waiting:
                raise refuse("a key must be text, not a list or a mapping", event)
            if len(stack) >= max_depth:
                raise refuse("lists and mappings must not be nested this deep", event)
            stack.append(_Frame({} if isinstance(event, yaml.MappingStartEvent) else []))
            continue
        if isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
            value = stack.pop().container
            parent = stack[-1] if stack else None
        elif isinstance(event, yaml.ScalarEvent):
            if parent is not None and isinstance(parent.container, dict) and parent.waiting:
                key = _key(loader, event, parent.container, refuse)
                if len(parent.container) >= max_keys:
                    raise refuse(f"a mapping must hold at most {max_keys} keys", event)
                parent.key, parent.waiting = key, False
                if len(stack) == 1:
                    key_lines.setdefault(key, event.start_mark.line)
                continue
            value = _scalar(loader, event, refuse)
        else:  # pragma: no cover - the parser emits nothing else inside a document
            raise refuse("invalid YAML", event)
        if parent is None:
            root = value
        elif isinstance(parent.container, dict):
            parent.container[parent.key] = value
            parent.waiting = True
        else:
            if len(parent.container) >= max_items:
                raise refuse(f"a list must hold at most {max_items} items", event)
            parent.container.append(value)
    loader.get_event()  # DocumentEnd
    if not loader.check_event(yaml.StreamEndEvent):
        raise YamlProblem("must hold one YAML document", loader.peek_event().start_mark.line)
    return YamlDocument(root, key_lines)


def _key(loader: Any, event: Any, mapping: dict, refuse: Any) -> str:
    tag = loader.resolve(yaml.ScalarNode, event.value, event.implicit)
    if tag == "tag:yaml.org,2002:merge":
        raise refuse("the YAML merge key << is not allowed", event)
    if tag != "tag:yaml.org,2002:str":
        raise refuse("a key must be text (quote it)", event)
    if event.value in mapping:
        raise refuse(f"duplicate key {event.value[:64]!r}", event)
    return event.value


def _scalar(loader: Any, event: Any, refuse: Any) -> Any:
    tag = loader.resolve(yaml.ScalarNode, event.value, event.implicit)
    if tag in ("tag:yaml.org,2002:int", "tag:yaml.org,2002:float", "tag:yaml.org,2002:bool",
               "tag:yaml.org,2002:null"):
        if len(event.value) > NUMBER_MAX_CHARS:
            raise refuse(f"a number must be at most {NUMBER_MAX_CHARS} characters", event)
        node = yaml.ScalarNode(tag, event.value, event.start_mark, event.end_mark)
        return loader.construct_object(node, deep=True)
    if tag == "tag:yaml.org,2002:merge":
        raise refuse("the YAML merge key << is not allowed", event)
    return event.value  # text (and `=`, which safe YAML has no value for, stays text)
