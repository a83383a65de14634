"""The command line and its documentation cannot drift apart.

The command tree is walked as click sees it (typer.main.get_command), so a new command, option or choice cannot
ship undocumented, and a removed one cannot stay documented: README.md's command table has one row per command; the
command reference of the docs site (generated from the app by tools/docs_reference.py) names every option and
choice under its command, each with a help text; and no hand-written page (README.md, docs/*.md) shows a command
with an option it lacks. Every command's --help has an Example and shows the choices, including those read from the
registries when help is shown.
"""

from __future__ import annotations

import re
import sys
from enum import Enum

import pytest
import typer
from typer.testing import CliRunner

from clihelp import ROOT
from harness.cli.main import app

sys.path.insert(0, str(ROOT / "tools"))
import docs_reference  # noqa: E402

README = (ROOT / "README.md").read_text(encoding="utf-8")
GROUP = typer.main.get_command(app)
REFERENCE = docs_reference.command_reference()
PAGES = {"README.md": README} | {f"docs/{p.name}": p.read_text(encoding="utf-8")
                                 for p in sorted((ROOT / "docs").glob("*.md"))}


BY_NAME = docs_reference.commands()  # every command by its full name (``goldset check`` has its own)
COMMANDS = sorted(BY_NAME)
WIDE = {"COLUMNS": "250", "TERMINAL_WIDTH": "250"}  # no wrapping inside a choice list like <a|b|c>


def readme_rows() -> list[str]:
    match = re.search(r"^## Commands\n(.*?)(?=^## )", README, flags=re.M | re.S)
    assert match, "README.md has no '## Commands' section"
    rows = [line.replace("\\|", "|") for line in match.group(1).splitlines() if line.startswith("| `harness")]
    assert rows, "README's command table has no rows"
    return rows


def row_of(command: str | None) -> str:
    head = f"`harness {command}" if command else "`harness --"
    rows = [r for r in readme_rows() if r.split(" | ")[0].startswith(f"| {head}")
            and (command is None or re.match(rf"\| `harness {re.escape(command)}[ `]", r))]
    assert len(rows) == 1, f"README command table: expected one row for harness {command or '(root)'}, got {rows}"
    return rows[0]


def section_of(command: str) -> str:
    """The generated reference's section for one command: from its heading to the next."""
    match = re.search(rf"^## `harness {re.escape(command)}`\n(.*?)(?=^## |\Z)", REFERENCE, flags=re.M | re.S)
    assert match, f"the command reference has no section for harness {command}"
    return match.group(1)


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


def test_the_readme_table_has_a_row_for_each_command_and_no_other():
    for name in [*COMMANDS, None]:
        row_of(name)
    named = {re.match(r"\| `harness ([a-z]+(?: [a-z]+)?)", r)[1] for r in readme_rows() if not r.startswith("| `harness --")}
    named = {n if n in BY_NAME or n.split()[0] not in BY_NAME else n.split()[0] for n in named}
    assert named <= set(BY_NAME), f"README names commands harness lacks: {sorted(named - set(BY_NAME))}"


@pytest.mark.parametrize("name", COMMANDS)
def test_every_option_and_choice_of_a_command_is_in_its_reference_section(name):
    command, section = BY_NAME[name], section_of(name)
    missing = []
    for param in command.params:
        if param.name == "help":
            continue
        if param.param_type_name == "option":
            missing += [o for o in param.opts + param.secondary_opts if not mentions(section, o)]
        missing += [f"{param.name}={c}" for c in choices_of(param) if not mentions(section, c)]
    assert not missing, f"the reference's section for harness {name} lacks {missing}"


@pytest.mark.parametrize("name", COMMANDS)
def test_every_option_says_what_it_does(name):
    """The generated reference shows each option's help: an option without one would be documented by its name only."""
    silent = [p.opts[0] for p in options(BY_NAME[name]) if not (p.help or "").strip()]
    assert not silent, f"harness {name}: options without a help text: {silent}"


@pytest.mark.parametrize("name", COMMANDS)
def test_the_reference_names_no_option_the_command_lacks(name):
    spelled = {o for p in options(BY_NAME[name]) for o in p.opts + p.secondary_opts}
    table = [line for line in section_of(name).splitlines() if line.startswith("| `")]
    documented = {o for line in table for o in re.findall(r"(?<![\w-])(--?[a-z][a-z-]*)", line.split(" | ")[0])}
    assert (documented or not spelled) and documented <= spelled, f"harness {name}: the reference documents {sorted(documented - spelled)}"


_SHOWN = re.compile(r"harness ((?:goldset )?[a-z]+)\b([^`|;&#\n]*)")


def test_no_page_shows_a_command_with_an_option_it_lacks():
    """Every `harness CMD ... --opt` written in README.md or docs/*.md (code spans and code blocks alike) uses an option
    CMD has: a renamed or removed option cannot stay in an example."""
    wrong = []
    for page, text in PAGES.items():
        for match in _SHOWN.finditer(text):
            name = match[1]
            if name not in BY_NAME:
                continue
            spelled = {o for p in options(BY_NAME[name]) for o in p.opts + p.secondary_opts} | {"--help"}
            used = set(re.findall(r"(?<![\w-])(--?[a-z][a-z-]*)", match[2]))
            wrong += [f"{page}: harness {name} {o}" for o in sorted(used - spelled)]
    assert not wrong, wrong


def test_root_options_are_documented():
    spelled = [o for p in options(GROUP) for o in p.opts]
    assert spelled == ["--version"]
    assert all(mentions(row_of(None), o) for o in spelled)
    assert all(mentions(REFERENCE, o) for o in spelled)


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


def test_every_metric_family_and_alias_is_in_the_metric_reference():
    """The generated metric reference is read from the declarations: a family or alias added there shows up."""
    from harness.metrics.spec import ALIASES, FAMILIES, parse_metric

    page = docs_reference.metrics_reference()
    assert len(FAMILIES) >= 9
    for name, family in FAMILIES.items():
        row = next(line for line in page.splitlines() if line.startswith(f"| `{name}` |"))
        assert family.reference.replace("&", "&amp;") in row and all(f"`{p}`" in row for p in family.params), row
    for alias in ALIASES:
        assert mentions(page, f"`{alias}`"), alias
        k = FAMILIES[ALIASES[alias]].k
        name = alias if k == "forbidden" else f"{alias}@window" if k == "window" else f"{alias}@5"
        assert parse_metric(name).family == ALIASES[alias]


def test_every_public_name_of_the_api_is_on_its_page():
    import harness

    page = (ROOT / "docs" / "python-api.md").read_text(encoding="utf-8")
    missing = [n for n in harness.__all__ if n != "__version__" and not re.search(rf"`{n}[`(]", page)]
    assert not missing, f"docs/python-api.md does not name {missing}"


def test_every_verdict_kind_and_flag_is_on_the_verdicts_page_in_precedence_order():
    from harness.result.model import FLAGS, KINDS

    page = (ROOT / "docs" / "verdicts.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| (\d) \| `([a-z_]+)` \|", page, flags=re.M)
    assert [kind for _, kind in rows] == list(KINDS) and [int(n) for n, _ in rows] == list(range(1, len(KINDS) + 1))
    assert all(f"- `{flag}`:" in page for flag in FLAGS), FLAGS
