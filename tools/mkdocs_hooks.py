"""MkDocs hooks: the config and command references are generated from the code at build time (never committed,
so they cannot drift). See ``tools/docs_reference.py``."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from docs_reference import GENERATED  # noqa: E402


def on_files(files, config):
    from mkdocs.structure.files import File

    for page, make in GENERATED.items():
        files.append(File.generated(config, page, content=make()))
    return files
