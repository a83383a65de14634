"""The reference pages generated from the code, so they cannot drift from it.

- ``config_reference()``: every key of the experiment config and of every registered retriever kind's config
  model, read from the pydantic models (type, default, choices, bounds, description).
- ``command_reference()``: every command of the typer app with its arguments, options, choices, defaults and help.

``mkdocs build`` adds both pages through ``tools/mkdocs_hooks.py``; ``python tools/docs_reference.py OUT_DIR``
writes them as Markdown files for a reader without MkDocs. Run from the repository root.
"""

from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path
from types import UnionType
from typing import Any, Literal, Union, get_args, get_origin

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script from anywhere: the harness of this checkout
    sys.path.insert(0, str(ROOT))

CONFIG_PAGE = "reference/config.md"
COMMANDS_PAGE = "reference/commands.md"
METRICS_PAGE = "reference/metrics.md"


# ---- config -------------------------------------------------------------------------------------------------------

def _models_in(annotation: Any) -> list[type]:
    from pydantic import BaseModel

    args = get_args(annotation) if get_origin(annotation) in (Union, UnionType) else (annotation,)
    return [a for a in args if isinstance(a, type) and issubclass(a, BaseModel)]


def type_name(annotation: Any) -> str:
    """A field's type in the words a YAML writer needs: ``int``, ``number``, ``text``, ``path``, ``mapping``..."""
    from pydantic import BaseModel

    origin = get_origin(annotation)
    if origin in (Union, UnionType):
        args = [a for a in get_args(annotation) if a is not type(None)]
        name = " or ".join(type_name(a) for a in args)
        return f"{name} or null" if len(args) < len(get_args(annotation)) else name
    if origin is Literal:
        kinds = {type(a).__name__ for a in get_args(annotation)}
        return "choice" if kinds == {"str"} else f"choice ({'/'.join(sorted(kinds))})"
    if origin in (list, tuple):
        inner = [a for a in get_args(annotation) if a is not Ellipsis]
        return f"list of {type_name(inner[0])}" if inner else "list"
    if origin is dict:
        return "mapping"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "mapping"
    names = {int: "integer", float: "number", str: "text", bool: "boolean", Path: "path"}
    if annotation in names:
        return names[annotation]
    return getattr(annotation, "__name__", str(annotation))


def choices(annotation: Any) -> list[Any]:
    if get_origin(annotation) is Literal:
        return list(get_args(annotation))
    if get_origin(annotation) in (Union, UnionType):
        return [c for a in get_args(annotation) for c in choices(a)]
    return []


def bounds(field) -> str:
    """The numeric and length bounds pydantic enforces (``Field(ge=1, le=...)``), as ``≥ 1, ≤ 1,000,000``."""
    words = []
    for item in field.metadata:
        for attr, sign in (("ge", "≥"), ("gt", ">"), ("le", "≤"), ("lt", "<")):
            value = getattr(item, attr, None)
            if value is not None:
                words.append(f"{sign} {value:,}" if isinstance(value, int) else f"{sign} {value}")
        if getattr(item, "min_length", None):
            words.append(f"at least {item.min_length} item" + ("s" if item.min_length > 1 else ""))
        if getattr(item, "pattern", None):
            words.append(f"matches `{item.pattern}`")
    return ", ".join(words)


def default_text(field) -> str:
    from pydantic import BaseModel
    from pydantic_core import PydanticUndefined

    if field.is_required():
        return "required"
    value = field.get_default(call_default_factory=True)
    if value is PydanticUndefined:
        return "required"
    if isinstance(value, BaseModel):
        return "(the keys below)"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (tuple, list)):
        return "[" + ", ".join(str(v) for v in value) + "]" if value else "[]"
    if isinstance(value, Path):
        return str(value)
    return str(value) if not isinstance(value, str) or value else '""'


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _prose(text: str) -> str:
    """Plain text for a Markdown table cell: ``reports/<name>/`` must not read as an HTML tag."""
    return _cell(" ".join(text.split()).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;"))


def _code(value: Any) -> str:
    return f"`{value}`" if str(value) else '`""`'


def description(name: str, field, prefix: str) -> str:
    """The field's description (its docstring or ``Field(description=...)``); a retriever kind's own ``kind`` field
    says the one thing it can: which kind it selects."""
    if field.description:
        return " ".join(field.description.split())
    if name == "kind" and not prefix and len(choices(field.annotation)) >= 1:
        return "selects this retriever kind"
    return ""


def model_rows(model: type, prefix: str = "") -> list[tuple[str, str, str, str, str]]:
    """(key path, type, default, choices, description) for every field of ``model``, nested models flattened
    into dotted keys after the key that holds them."""
    rows = []
    for name, field in model.model_fields.items():
        key = f"{prefix}{name}"
        kind = type_name(field.annotation)
        limit = bounds(field)
        rows.append((key, kind + (f" ({limit})" if limit else ""), default_text(field),
                     ", ".join(_code(c) for c in choices(field.annotation)), description(name, field, prefix)))
        for nested in _models_in(field.annotation):
            rows += model_rows(nested, f"{key}.")
    return rows


def _table(rows: list[tuple[str, str, str, str, str]]) -> list[str]:
    lines = ["| key | type | default | choices | description |", "|---|---|---|---|---|"]
    lines += [f"| `{_cell(k)}` | {_cell(t)} | {_cell(_code(d) if d not in ('required', '(the keys below)') else d)} "
              f"| {_cell(c)} | {_prose(desc)} |" for k, t, d, c, desc in rows]
    return lines


def retriever_kinds() -> dict[str, Any]:
    """Every registered kind, the built-in ones and any a plugin adds (``harness.retrievers.kinds``)."""
    from harness.retrievers import REGISTRY, kinds

    return {name: REGISTRY[name] for name in kinds()}


def config_sections() -> dict[str, list[tuple[str, str, str, str, str]]]:
    """The experiment config by top-level section, then ``retriever: {kind: K}`` for each kind."""
    from harness.config.schema import ExperimentConfig

    sections: dict[str, list] = {"(top level)": []}
    for name, field in ExperimentConfig.model_fields.items():
        nested = _models_in(field.annotation)
        row = model_rows(ExperimentConfig, "")
        top = next(r for r in row if r[0] == name)
        sections["(top level)"].append(top)
        if nested:
            sections[name] = [r for r in row if r[0].startswith(f"{name}.")]
    for kind, entry in retriever_kinds().items():
        sections[f"retriever: {kind}"] = [(f"retriever.{k}", *rest) for k, *rest in model_rows(entry.config_model)]
    return sections


def config_reference() -> str:
    from harness.retrievers import REGISTRY

    out = ["# Config reference", "",
           "Generated from the pydantic models (`harness/config/schema.py` and each retriever kind's config model) "
           "when the site is built: every key a config accepts, with its type, default, choices and bounds. A key "
           "not listed here is an error (with the nearest valid key suggested). Relative paths resolve against "
           "the config's folder; `${VAR}` is replaced from the environment. What each section does is explained "
           "in [Formats](../formats.md), [Verdicts](../verdicts.md), [Backends](../backends.md) and "
           "[Running on a cluster](../cluster.md).", ""]
    sections = config_sections()
    out += ["## Top-level keys", ""] + _table(sections.pop("(top level)")) + [""]
    kinds = {s: rows for s, rows in sections.items() if s.startswith("retriever: ")}
    for section, rows in sections.items():
        if section in kinds:
            continue
        out += [f"## `{section}`", ""] + _table(rows) + [""]
    out += ["## Retriever kinds", "",
            "`retriever.kind` chooses one of these; each kind validates its own keys. A `hybrid`'s `children` and a "
            "`reranked`'s `child` are retriever sections of any kind; a hybrid child may also set `weight` "
            "(default 1.0) and `depth` (default: the hybrid's `depth`).", ""]
    for section, rows in kinds.items():
        kind = section.split(": ", 1)[1]
        summary = REGISTRY[kind].summary
        out += [f"### `{kind}`", ""] + ([_prose(summary[:1].upper() + summary[1:]) + ".", ""] if summary else [])
        out += _table(rows) + [""]
    return "\n".join(out)


# ---- commands -----------------------------------------------------------------------------------------------------

def _walk(group, prefix: str = ""):
    for name, cmd in group.commands.items():
        if hasattr(cmd, "commands"):
            yield from _walk(cmd, f"{prefix}{name} ")
        else:
            yield f"{prefix}{name}", cmd


def commands() -> dict[str, Any]:
    """Every command as click sees it (``goldset check`` has its own entry), by full name."""
    import typer

    from harness.cli.main import app

    return dict(sorted(_walk(typer.main.get_command(app))))


def param_choices(param) -> list[str]:
    """A parameter's choices: typer >= 0.29 keeps the Enum on ``type_descriptor``, older typer a click.Choice."""
    annotation = getattr(getattr(param, "type_descriptor", None), "annotation", None)
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        return [m.value for m in annotation]
    return [str(c) for c in getattr(getattr(param, "type", None), "choices", ())]


def _arg_name(param) -> str:
    return param.metavar or param.name.upper()


def _help_text(command) -> tuple[str, str]:
    """(the help's first paragraph and the rest, the ``Example:`` line apart) of a command."""
    text = (command.help or "").strip()
    paragraphs = [" ".join(p.split()) for p in text.split("\n\n") if p.strip()]
    return (paragraphs[0] if paragraphs else ""), "\n\n".join(paragraphs[1:])


def command_reference() -> str:
    import typer

    from harness.cli.main import app

    root = typer.main.get_command(app)
    out = ["# Command reference", "",
           "Generated from the command line itself (the typer app in `harness/cli/main.py`) when the site is "
           "built: every command, argument and option with its choices and default. `harness COMMAND --help` "
           "shows the same. Exit codes: 0 success, 1 a finding that needs a person (a failed gate, an ambiguous "
           "answer, a label that moved), 2 bad input (one located line per problem, never a traceback), 130/143 "
           "interrupted.", "",
           "| root option | meaning |", "|---|---|"]
    out += [f"| `{', '.join(p.opts)}` | {_prose(p.help or '')} |" for p in root.params
            if p.param_type_name == "option" and p.name != "help"]
    out.append("")
    for name, command in commands().items():
        first, rest = _help_text(command)
        args = [p for p in command.params if p.param_type_name == "argument"]
        usage = " ".join([f"harness {name}"] + [_arg_name(p) + ("..." if p.nargs == -1 else "")
                                                 for p in args] + ["[OPTIONS]"])
        out += [f"## `harness {name}`", "", _prose(first), "", f"```\n{usage}\n```", ""]
        paragraphs = rest.split("\n\n") if rest else []
        examples = [p[len("Example: "):] for p in paragraphs if p.startswith("Example: ")]
        out += [x for p in paragraphs if not p.startswith("Example: ") for x in (_prose(p), "")]
        if examples:
            out += ["Example" + ("s:" if len(examples) > 1 else ":"), "", "```\n" + "\n".join(examples) + "\n```", ""]
        rows = []
        for p in command.params:
            if p.name == "help":
                continue
            spelled = ", ".join(p.opts + p.secondary_opts) if p.param_type_name == "option" else _arg_name(p)
            values = param_choices(p)
            default = p.default if not callable(p.default) else None
            shown = "" if default in (None, (), [], False) or p.param_type_name == "argument" else \
                (default.value if isinstance(default, Enum) else default)
            need = "required" if p.required else ""
            rows.append(f"| `{spelled}` | {_prose(getattr(p, 'help', None) or '')} "
                        f"| {_cell(', '.join(f'`{c}`' for c in values))} "
                        f"| {_cell(need or (f'`{shown}`' if shown != '' else ''))} |")
        if rows:
            out += ["| argument or option | meaning | choices | default |", "|---|---|---|---|"] + rows + [""]
    return "\n".join(out)


# ---- metrics ------------------------------------------------------------------------------------------------------

def metrics_reference() -> str:
    """Every metric family from its declaration (``harness.metrics.spec.FAMILIES``), with its parameters, and every
    alias accepted on input."""
    from harness.metrics.spec import _TREC_EVAL, ALIASES, DEFAULT_METRICS, FAMILIES, PARAM_CHOICES, PARAM_DEFAULTS

    def params(family) -> str:
        return ", ".join(f"`{p}`" + (f" (`{'`, `'.join(PARAM_CHOICES[p])}`; default `{PARAM_DEFAULTS[p]}`)"
                                     if p in PARAM_CHOICES else f" (default `{PARAM_DEFAULTS[p]}`)")
                         for p in family.params)

    cutoff = {"required": "`@k` required", "optional": "`@k` optional", "forbidden": "no `@k`",
              "window": "`@window` only"}
    out = ["# Metric reference", "",
           "Generated from the metric declarations (`harness/metrics/spec.py`) when the site is built. A name is "
           "`family[(param=value,...)][@k]`: `precision@5`, `ndcg(gain=exp)@10`, `precision(rel=2)@5`. "
           "`@window` is each query's own context window (a pipeline run only). How the numbers are computed and "
           "averaged: [Metric conventions](../metrics.md).", "",
           "| family | definition | cutoff | `@window` | parameters | reference |", "|---|---|---|---|---|---|"]
    out += [f"| `{f.name}` | {_prose(f.definition)} | {cutoff[f.k]} | {'yes' if f.window else ''} | {params(f)} "
            f"| {_prose(f.reference)} |" for f in FAMILIES.values()]
    by_family: dict[str, list[str]] = {}
    for alias, family in sorted(ALIASES.items()):
        if alias != family:
            by_family.setdefault(family, []).append(alias)
    out += ["", "Aliases accepted on input (any case), each read as its family: "
            + "; ".join(f"{', '.join(f'`{a}`' for a in aliases)} → `{family}`"
                        for family, aliases in sorted(by_family.items()))
            + ". trec_eval's spellings are read too: "
            + ", ".join(f"`{'P' if name == 'p' else name}_k` → `{family}@k`" for name, family in _TREC_EVAL.items())
            + ".", "",
            "The metrics a config computes when it names none: " + ", ".join(f"`{m}`" for m in DEFAULT_METRICS) + "."]
    return "\n".join(out)


GENERATED = {CONFIG_PAGE: config_reference, COMMANDS_PAGE: command_reference, METRICS_PAGE: metrics_reference}


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python tools/docs_reference.py OUT_DIR", file=sys.stderr)
        return 2
    for page, make in GENERATED.items():
        target = Path(argv[0]) / page
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(make() + "\n", encoding="utf-8")
        print(target)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
