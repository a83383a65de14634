"""The command line and its documentation cannot drift apart.

The command tree is walked as click sees it (typer.main.get_command), so a new command, option or choice cannot
ship without a row in README.md's command reference, and a removed one cannot stay documented. Every command's
--help has an Example and shows the choices, including those read from the registries when help is shown.
"""

from __future__ import annotations

import re
from enum import Enum

import pytest
import typer
from typer.testing import CliRunner

from clihelp import ROOT
from harness.cli.main import app

README = (ROOT / "README.md").read_text(encoding="utf-8")
GROUP = typer.main.get_command(app)


def _walk(group, prefix: str = ""):
    """Every command by its full name; a group's commands (``goldset check``) each have their own row."""
    for name, cmd in group.commands.items():
        if hasattr(cmd, "commands"):
            yield from _walk(cmd, f"{prefix}{name} ")
        else:
            yield f"{prefix}{name}", cmd


BY_NAME = dict(_walk(GROUP))
COMMANDS = sorted(BY_NAME)
WIDE = {"COLUMNS": "250", "TERMINAL_WIDTH": "250"}  # no wrapping inside a choice list like <a|b|c>


def reference_rows() -> list[str]:
    match = re.search(r"^## Command reference\n(.*?)(?=^## )", README, flags=re.M | re.S)
    assert match, "README.md has no '## Command reference' section"
    rows = [line.replace("\\|", "|") for line in match.group(1).splitlines() if line.startswith("| `harness")]
    assert rows, "the command reference has no table rows"
    return rows


def row_of(command: str | None) -> str:
    head = f"`harness {command}" if command else "`harness --"
    rows = [r for r in reference_rows() if r.split(" | ")[0].startswith(f"| {head}")]
    assert len(rows) == 1, f"README command reference: expected one row for harness {command or '(root)'}, got {rows}"
    return rows[0]


def options(command) -> list:
    return [p for p in command.params if p.param_type_name == "option" and p.name != "help"]


def choices_of(param) -> list[str]:
    """The values a parameter accepts, if it is a choice: typer >= 0.29 keeps the Enum on ``type_descriptor``,
    older typer hands click a ``click.Choice``."""
    annotation = getattr(getattr(param, "type_descriptor", None), "annotation", None)
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        return [m.value for m in annotation]
    return [str(c) for c in getattr(getattr(param, "type", None), "choices", ())]


def mentions(text: str, token: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(token)}(?![\w-])", text) is not None


def test_the_tree_is_the_one_we_ship():
    # Guards the walk itself: an empty tree would make every check below pass.
    assert COMMANDS == ["cache", "compare", "eval", "explain", "gate", "goldset build", "goldset check",
                        "goldset merge", "goldset pool", "goldset stats", "init", "report", "run", "validate"]
    assert sum(len(options(BY_NAME[c])) for c in COMMANDS) >= 25
    assert choices_of(next(p for p in GROUP.commands["eval"].params if p.name == "fmt")) == ["json", "tsv", "md",
                                                                                             "table"]


@pytest.mark.parametrize("name", COMMANDS)
def test_every_option_and_choice_of_a_command_is_in_its_readme_row(name):
    command, row = BY_NAME[name], row_of(name)
    missing = []
    for param in command.params:
        if param.name == "help":
            continue
        if param.param_type_name == "option":
            missing += [o for o in param.opts + param.secondary_opts if not mentions(row, o)]
        missing += [f"{param.name}={c}" for c in choices_of(param) if not mentions(row, c)]
    assert not missing, f"README's row for harness {name} lacks {missing}:\n{row}"


@pytest.mark.parametrize("name", COMMANDS)
def test_the_readme_row_names_no_option_the_command_lacks(name):
    spelled = {o for p in options(BY_NAME[name]) for o in p.opts + p.secondary_opts}
    cells = row_of(name).split(" | ")
    documented = set(re.findall(r"(?<![\w-])(--?[a-z][a-z-]*)", cells[-1]))
    assert documented <= spelled, f"harness {name}: README documents {sorted(documented - spelled)}"


def test_root_options_are_documented():
    spelled = [o for p in options(GROUP) for o in p.opts]
    assert spelled == ["--version"]
    assert all(mentions(row_of(None), o) for o in spelled)


@pytest.mark.parametrize("name", COMMANDS)
def test_help_has_an_example_and_shows_every_choice(name):
    result = CliRunner().invoke(app, [*name.split(), "--help"], env=WIDE, prog_name="harness")
    assert result.exit_code == 0, result.output
    assert "Example: harness " + name in result.output
    for param in BY_NAME[name].params:
        choices = choices_of(param)
        if choices:
            assert "|".join(choices) in result.output, (param.name, result.output)


@pytest.mark.parametrize("name, expected", [
    ("run", ("retriever", "verdict")), ("validate", ("retriever",)), ("explain", ("verdict",)),
    ("gate", ("verdict",))])
def test_help_lists_registry_choices(name, expected):
    """Read from the registries when help is shown: a kind registered later shows up by itself."""
    from harness.diagnostics.verdicts import FLAGS, KINDS
    from harness.retrievers import kinds

    output = CliRunner().invoke(app, [name, "--help"], env=WIDE, prog_name="harness").output
    flat = " ".join(output.split())
    if "retriever" in expected:
        assert f"Retriever kinds (retriever.kind): {', '.join(kinds())}." in flat
    if "verdict" in expected:
        assert f"Verdict kinds, in order of precedence: {', '.join(KINDS)}; flags: {', '.join(FLAGS)}." in flat


def test_shared_options_have_one_help_text():
    """-m/--metric, --format and -o/--out are defined once (harness/cli/options.py): the same words everywhere."""
    helps: dict[str, set[str]] = {}
    for name in COMMANDS:
        for p in options(BY_NAME[name]):
            if p.name in ("metric", "fmt") or "--out" in p.opts:
                text = p.help
                if p.name == "fmt":  # each command lists its own formats, each described the same way
                    text = re.sub(r"\(.*\)", "(...)", text)
                if "--out" in p.opts:
                    text = re.sub(r": .* \(", ": ... (", text)
                helps.setdefault(p.opts[0], set()).add(text)
    assert set(helps) == {"--metric", "--format", "--out"}
    assert all(len(texts) == 1 for texts in helps.values()), helps
