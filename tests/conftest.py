from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "datasets"


def shared_dataset(name: str) -> Path:
    path = SHARED / name
    if not path.is_dir():
        pytest.skip(f"../shared/datasets/{name} is not present")
    return path
