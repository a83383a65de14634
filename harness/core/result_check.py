"""Located messages for a results.json that does not fit its schema (``harness.core.result``): one line per
problem, naming the key path (``queries.3.hits.0.rank: expected a whole number, got '1'``)."""

from __future__ import annotations

import difflib
import typing
from typing import Annotated, Any

from pydantic import BaseModel

MAX_SHOWN = 20  # problems listed in one error; the rest are counted


def got(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return f"a list of {len(value)}"
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _field_type(annotation: Any, key: Any) -> Any:
    """The type one step of a location down from ``annotation`` (a model field, list item or dict value)."""
    while typing.get_origin(annotation) is Annotated:
        annotation = typing.get_args(annotation)[0]
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        field = annotation.model_fields.get(key)
        return field.annotation if field else None
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is list and isinstance(key, int):
        return args[0]
    if origin is dict:
        return args[1]
    if args:  # X | None: follow the non-null member
        inner = [a for a in args if a is not type(None)]
        return _field_type(inner[0], key) if len(inner) == 1 else None
    return None


def _unknown_field(root: type[BaseModel], loc: tuple) -> str:
    owner: Any = root
    for key in loc[:-1]:
        owner = _field_type(owner, key)
    while typing.get_origin(owner) is Annotated:
        owner = typing.get_args(owner)[0]
    if isinstance(owner, type) and issubclass(owner, BaseModel):
        fields = list(owner.model_fields)
        near = difflib.get_close_matches(str(loc[-1]), fields, n=1, cutoff=0.6)
        return "unknown field" + (f"; did you mean {near[0]!r}?" if near else f"; expected {', '.join(fields)}")
    return "unknown field"


_EXPECTED = {"int_type": "a whole number", "int_parsing": "a whole number", "int_from_float": "a whole number",
             "float_type": "a number", "float_parsing": "a number", "string_type": "a string",
             "bool_type": "true or false", "dict_type": "an object", "model_type": "an object",
             "model_attributes_type": "an object", "list_type": "a list"}


def _message(root: type[BaseModel], err: dict) -> str:
    kind, value = err["type"], err.get("input")
    ctx = err.get("ctx") or {}
    if kind == "missing":
        return "required field is missing"
    if kind == "extra_forbidden":
        return _unknown_field(root, tuple(err["loc"]))
    if kind in _EXPECTED:
        return f"expected {_EXPECTED[kind]}, got {got(value)}"
    if kind == "literal_error":
        return f"expected one of {ctx.get('expected')}, got {got(value)}"
    if kind in ("greater_than_equal", "greater_than", "less_than_equal", "less_than"):
        bound = next(iter(ctx.values()), "?")
        words = {"greater_than_equal": "at least", "greater_than": "more than",
                 "less_than_equal": "at most", "less_than": "less than"}[kind]
        return f"must be {words} {bound}, got {got(value)}"
    if kind in ("too_short", "too_long") and ctx.get("min_length") == 2 == ctx.get("max_length", 2):
        return f"expected a [start, end] pair, got {got(value)}"
    if kind == "string_pattern_mismatch":
        return f"expected a run name (letters, digits, '_', '.', '-'), got {got(value)}"
    return f"{err['msg']}, got {got(value)}"


def located(root: type[BaseModel], err: dict) -> str:
    """One pydantic error of validating ``root`` as ``key.path: message``."""
    loc, key = tuple(err["loc"]), ""
    if len(loc) >= 2 and loc[-1] == "[key]":  # pydantic's marker for a bad mapping key
        loc, key = loc[:-2], f"key {loc[-2]!r}: "
    return f"{'.'.join(str(p) for p in loc) or '<root>'}: {key}{_message(root, err)}"


def shown(where: str, problems: list[str]) -> list[str]:
    lines = [f"{where}: {p}" for p in problems[:MAX_SHOWN]]
    if len(problems) > MAX_SHOWN:
        lines.append(f"... and {len(problems) - MAX_SHOWN} more")
    return lines
