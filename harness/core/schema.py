"""What every config model shares: the strict pydantic base, the rank ceiling, and pydantic errors as located lines.

Here, not in ``config``, so retriever kinds (built-in or third-party) declare their config models without importing
the experiment config, which itself validates retriever sections through the registry."""

from __future__ import annotations

import difflib
import re
from types import UnionType
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, ValidationError, ValidationInfo, field_validator


# Text pydantic would read as a number. Not 1e-3: YAML 1.1 reads a plain exponent without a dot as text, so it is
# taken as the number the user wrote (a float setting) or said how to write (an integer setting).
_NUMERIC = re.compile(r"[+-]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9]+)|[+-]?(?:inf|nan)", re.I)
# Of those, the ones that are no finite number (inf, nan): text whether quoted or not (YAML 1.1 spells them .inf,
# .nan), and refused as .inf and .nan are (Strict: allow_inf_nan=False), so "write it without quotes" would mislead.
_NONFINITE = re.compile(r"[+-]?(?:inf|infinity|nan)", re.I)


class EnvText(str):
    """A config value that was one ``${VAR}`` and nothing else: text the environment gave, which a number setting
    reads as the number it spells (``depth: ${DEPTH}``)."""


class Strict(BaseModel):
    # inf and nan are never a meaningful setting here (k1: .inf makes every BM25 score nan). A field's docstring is
    # its description: the config reference of the docs is generated from it.
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False, use_attribute_docstrings=True)

    def settings_given(self) -> set[str]:
        """The fields the input set to something other than their default: a config written out whole
        (``resolved()``, ``model_dump()``) and given back sets every field, but only these say what the user chose."""
        fields = type(self).model_fields
        return {name for name in self.model_fields_set
                if getattr(self, name) != fields[name].get_default(call_default_factory=True)}

    @field_validator("*", mode="before")
    @classmethod
    def _numbers_are_numbers(cls, value: Any, info: ValidationInfo) -> Any:
        """The number rule (``core.ids.whole``) for settings: pydantic reads true as 1 for a number
        (``cutoff.k: true`` ran with k = 1, ``k1: true`` with 1.0) and "2" as 2, where the strict config means to
        refuse both: YAML makes true, yes and on booleans, and a quoted "2" is text. A ``${VAR}`` that is the whole
        value is read as the number it holds (an environment variable is always text)."""
        if isinstance(value, (bool, str)) and not isinstance(value, EnvText) and info.field_name in cls.model_fields:
            annotation = cls.model_fields[info.field_name].annotation
            if not _accepts(annotation, (int, float)) or _accepts(annotation, (type(value),)):
                return value
            if isinstance(value, bool):
                raise ValueError("is a boolean here (YAML reads true/false, yes/no, on/off as booleans); this "
                                 "setting takes a number")
            if _NONFINITE.fullmatch(value.strip()):  # YAML reads a plain inf or nan as text: no quotes to drop
                raise ValueError("is not a finite number; this setting takes a finite number")
            if _NUMERIC.fullmatch(value.strip()):  # other text gets pydantic's own "should be a valid number"
                raise ValueError("is text here (quoted); this setting takes a number: write it without quotes")
        return value


def _accepts(annotation: Any, types: tuple[type, ...]) -> bool:
    """Whether a field's type takes a value of one of ``types`` as itself: the type, a Literal of such values, or
    a union (or Annotated) with one of those."""
    if annotation in types or annotation is Any:
        return True
    origin = get_origin(annotation)
    if origin is Literal:
        return any(type(a) in types for a in get_args(annotation))
    if origin in (Union, UnionType, Annotated):
        args = get_args(annotation)
        return any(_accepts(a, types) for a in (args[:1] if origin is Annotated else args))
    return False


# The largest rank setting accepted (depth, cutoff.k, metric cutoffs, a hybrid child's depth, reranked top_n): far
# beyond any corpus a run can rank, and small enough that nothing sized by it overflows or allocates gigabytes.
MAX_RANK = 1_000_000

# Said by a validator refusing a value that holds a secret (a URL with user:pass@ or ?api_key=): the value is then
# never repeated in the message.
CREDENTIALS = "must not carry credentials"

_EXPONENT = re.compile(r"^[+-]?[0-9]+(\.[0-9]*)?[eE][+-]?[0-9]+$")


def _model_at(model: type[BaseModel], loc: tuple) -> type[BaseModel] | None:
    """The pydantic model that owns the last key of ``loc`` (for suggesting a near key)."""
    current: Any = model
    for part in loc[:-1]:
        if not (isinstance(current, type) and issubclass(current, BaseModel)):
            return None
        field = current.model_fields.get(str(part))
        if field is None:
            return None
        current = field.annotation
        args = getattr(current, "__args__", ())
        for a in args:
            if isinstance(a, type) and issubclass(a, BaseModel):
                current = a
    return current if isinstance(current, type) and issubclass(current, BaseModel) else None


def format_validation_error(exc: ValidationError, model: type[BaseModel], prefix: tuple = ()) -> list[str]:
    problems = []
    for err in exc.errors():
        loc = tuple(err["loc"])
        path = ".".join(str(p) for p in prefix + loc) or "<root>"
        if err["type"] == "extra_forbidden":
            owner = _model_at(model, loc)
            hint = ""
            if owner is not None:
                near = difflib.get_close_matches(str(loc[-1]), list(owner.model_fields), n=1, cutoff=0.6)
                valid = ", ".join(sorted(owner.model_fields))
                hint = f"; did you mean '{near[0]}'?" if near else f"; valid keys: {valid}"
            problems.append(f"{path}: unknown key{hint}")
            continue
        msg = err["msg"].removeprefix("Value error, ")  # our validators' own words need no pydantic prefix
        if err["type"] == "string_pattern_mismatch" and loc[-1:] == ("name",):  # the one pattern: a run's name
            msg = ("a run's name is its folder's and files' name: ASCII letters, digits and _ . - only, starting "
                   "with a letter or digit")
        if err["type"] == "missing":
            problems.append(f"{path}: required key is missing")
            continue
        if err["type"] == "model_type":  # pydantic names its class ("instance of WindowsConfig"): say what to write
            owner = _model_at(model, loc + ("",))  # the model at loc itself: the owner of a key one level below
            keys = f" ({', '.join(sorted(owner.model_fields))})" if owner is not None else ""
            msg = f"should be a mapping of keys{keys}, as a YAML block or {{key: value}}"
        got = err.get("input")
        got_text = "" if isinstance(got, dict) or CREDENTIALS in msg else f" (got {got!r})"
        if err["type"] == "int_parsing" and isinstance(got, str) and _EXPONENT.match(got.strip()):
            got_text += "; YAML reads a number like 1e8 as text: write it out (100000000)"
        problems.append(f"{path}: {msg}{got_text}")
    return problems
