"""YAML for user files (configs, gate rules, golden sets) that cannot explode, recurse or silently drop a key.

``yaml.safe_load`` builds aliases as shared objects, so a 550-byte "billion laughs" file loads fast and then
explodes in whatever walks it (2.6 GB in 90 s in the config loader); a self-referencing alias (``a: &x [*x]``)
recurses forever; a key given twice keeps the last value without a word. ``load_yaml`` checks the composed node
graph before building any Python object: the alias expansion and nesting depth are bounded, cycles are refused,
and every duplicate key is reported with both lines and its key path. Problems become the caller's error class.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from .jsonl import lone_surrogate_problem

# Extra nodes that aliases may add beyond the nodes written in the file. A plain file never hits it (its size is
# bounded by its length); real configs reuse an anchor a few times; a billion-laughs file needs 10^9.
MAX_ALIAS_NODES = 100_000
# Deeper nesting than any config or golden set has; keeps every recursive walker downstream far from its limit.
MAX_DEPTH = 100
_MERGE = "tag:yaml.org,2002:merge"


class _Refused(Exception):
    def __init__(self, message: str, problems: list[str] | None = None):
        super().__init__(message)
        self.message, self.problems = message, problems or []


def _line(node: Node) -> int:
    return node.start_mark.line + 1


def _children(node: Node) -> list[tuple[str, Node]]:
    if isinstance(node, SequenceNode):
        return [(str(i), child) for i, child in enumerate(node.value)]
    if isinstance(node, MappingNode):
        out = []
        for key, value in node.value:
            label = str(key.value) if isinstance(key, ScalarNode) else "?"
            out += [("", key), (label, value)]
        return out
    return []


class CheckedLoader(yaml.SafeLoader):
    """SafeLoader (pure Python: its composer honours the recursion limit) that checks the node graph first."""

    source = "<yaml>"
    duplicates: list[str] | None = None  # a list: duplicate keys are added to it (the last value kept), not raised

    def get_single_data(self) -> Any:
        node = self.get_single_node()
        if node is None:
            return None
        self._check_graph(node)
        return self.construct_document(node)

    def construct_object(self, node: Node, deep: bool = False) -> Any:
        try:
            value = super().construct_object(node, deep)
            if isinstance(value, str) and not value.isascii():
                value.encode("utf-8")  # "\ud800" in double quotes is half of a surrogate pair: no character
            return value
        except UnicodeEncodeError as exc:
            raise yaml.constructor.ConstructorError(
                None, None, lone_surrogate_problem(f"\\u{ord(exc.object[exc.start]):04x}"), node.start_mark) from None
        except yaml.YAMLError:
            raise
        except (ValueError, TypeError, KeyError, AttributeError, OverflowError, IndexError) as exc:
            # SafeConstructor lets a few bad scalars through as plain exceptions: 2020-13-45, !!int x, !!bool x.
            tag = node.tag.rsplit(":", 1)[-1] if node.tag.startswith("tag:yaml.org,2002:") else node.tag
            raise yaml.constructor.ConstructorError(None, None, f"cannot read this {tag} value ({exc})",
                                                    node.start_mark) from None

    def _check_graph(self, root: Node) -> None:
        """One iterative pass (no recursion to overflow): expanded size, depth, cycles, duplicate keys."""
        size: dict[int, int] = {}  # id(node) -> nodes it expands to, once finished
        depth: dict[int, int] = {}
        on_path: set[int] = set()
        duplicates: list[tuple[int, str]] = []
        unique = 0
        stack: list[tuple[Node, str, bool]] = [(root, "", False)]
        while stack:
            node, path, done = stack.pop()
            nid = id(node)
            if done:
                kids = [child for _, child in _children(node)]
                size[nid] = 1 + sum(size[id(k)] for k in kids)
                depth[nid] = 1 + max((depth[id(k)] for k in kids), default=0)
                on_path.discard(nid)
                if depth[nid] > MAX_DEPTH:
                    raise _Refused(f"{self.source} (line {_line(node)}): nested more than {MAX_DEPTH} levels deep")
                if size[nid] - unique > MAX_ALIAS_NODES:
                    raise _Refused(f"{self.source}: aliases (*name) expand this file beyond {MAX_ALIAS_NODES:,} extra "
                                   f"values (an alias bomb?); refusing to load it. Write the values out instead")
                continue
            if nid in size:
                continue  # an alias to a finished node: counted by its parents through size[nid]
            if nid in on_path:
                raise _Refused(f"{self.source} (line {_line(node)}): the value anchored here contains an alias to "
                               f"itself (a recursive alias); it cannot be loaded")
            on_path.add(nid)
            unique += 1
            if isinstance(node, MappingNode):
                duplicates += self._duplicates(node, path)
            stack.append((node, path, True))
            for label, child in reversed(_children(node)):
                if id(child) in on_path:
                    raise _Refused(f"{self.source} (line {_line(child)}): the value anchored here contains an alias "
                                   f"to itself (a recursive alias); it cannot be loaded")
                stack.append((child, f"{path}.{label}" if path else label, False))
        if duplicates and self.duplicates is not None:  # the caller reports them with its own problems
            self.duplicates += [message for _, message in sorted(duplicates)]
        elif duplicates:
            raise _Refused(f"{self.source}: {len(duplicates)} key(s) given twice (YAML would keep only the last)",
                           [message for _, message in sorted(duplicates)])

    def _duplicates(self, node: MappingNode, path: str) -> list[tuple[int, str]]:
        first: dict[Any, int] = {}
        out = []
        for key, _ in node.value:
            if not isinstance(key, ScalarNode) or key.tag == _MERGE:
                continue  # a merged key may be overridden on purpose; non-scalar keys fail construction anyway
            value = self.construct_object(key)
            try:
                seen = first.get(value)
            except TypeError:
                continue
            where = f"{path}.{value}" if path else str(value)
            if seen is not None:
                out.append((_line(key), f"{self.source}:{_line(key)}: {where}: key given twice (first on line {seen})"))
            else:
                first[value] = _line(key)
        return out


def parse_yaml(text: str, source: str, error_cls: type[Exception], duplicates: list[str] | None = None) -> Any:
    """Parse YAML text from ``source`` (a file name for messages); any problem raises ``error_cls``, whose
    constructor takes ``(message, problems)`` like ``InputError``. With ``duplicates`` (a list), keys given twice
    are added to it, located, instead of raised: a caller that validates the data reports them with its own."""
    return parse_yaml_node(text, source, error_cls, duplicates=duplicates)[1]


def parse_yaml_node(text: str, source: str, error_cls: type[Exception],
                    loader_cls: type["CheckedLoader"] | None = None,
                    duplicates: list[str] | None = None) -> tuple[Node | None, Any]:
    """``parse_yaml`` that also returns the root node (for line numbers). ``loader_cls`` may subclass
    ``CheckedLoader`` to construct scalars differently; the graph checks stay the same."""
    loader = None
    try:
        loader = (loader_cls or CheckedLoader)(text)  # the reader refuses control characters already here
        loader.source = source
        loader.duplicates = duplicates
        node = loader.get_single_node()
        if node is None:
            return None, None
        loader._check_graph(node)
        return node, loader.construct_document(node)
    except _Refused as exc:
        raise error_cls(exc.message, exc.problems) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        if isinstance(exc, yaml.reader.ReaderError):
            where = f" (character {exc.position + 1})"
            exc = f"character #x{exc.character:04x} is not allowed in YAML" if isinstance(exc.character, int) else exc
        lines = text.splitlines()
        line = lines[mark.line] if mark is not None and mark.line < len(lines) else ""
        hint = ' (a ${VAR} inside {...} or [...] must be quoted: path: "${VAR}/file")' if "${" in line else ""
        raise error_cls(f"{source}{where}: not valid YAML: {getattr(exc, 'problem', None) or exc}{hint}") from None
    except RecursionError:
        raise error_cls(f"{source}: nested too deeply to read (more than {MAX_DEPTH} levels)") from None
    finally:
        if loader is not None:
            loader.dispose()


def load_yaml(path: str | Path, error_cls: type[Exception], duplicates: list[str] | None = None) -> Any:
    """Read a UTF-8 YAML file safely (see the module docstring); a missing or unreadable file is ``error_cls``;
    ``duplicates`` as in ``parse_yaml``."""
    path = Path(path)
    if not path.is_file():
        raise error_cls(f"{path}: file not found")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise error_cls(f"{path}: not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise error_cls(f"{path}: cannot be read ({exc.strerror})") from None
    return parse_yaml(text, str(path), error_cls, duplicates)
