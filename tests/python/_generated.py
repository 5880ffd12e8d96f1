"""Files a generator script writes and the tree commits (tests/vectors/*/make_vectors.py, tests/adversarial/
make_corpus.py): the script loaded as a module, and the check that what is committed is exactly what it writes now."""

from __future__ import annotations

import functools
import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Iterable


@functools.lru_cache(maxsize=None)
def load_script(path: Path) -> ModuleType:
    """The generator script at ``path`` as a module, loaded once per test session (it is not a package module)."""
    spec = importlib.util.spec_from_file_location(f"{path.parent.name}_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def assert_matches_fresh_generation(script: Path, suffixes: Iterable[str], tmp_path: Path) -> None:
    """The files with ``suffixes`` under the script's folder, subfolders included, are byte for byte and name for
    name what its ``write_all`` writes into an empty folder now."""
    directory = script.parent
    load_script(script).write_all(tmp_path)
    fresh = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file())
    committed = sorted(p.relative_to(directory) for p in directory.rglob("*")
                       if p.is_file() and p.suffix in tuple(suffixes))
    assert fresh == committed
    for rel in fresh:
        assert (tmp_path / rel).read_bytes() == (directory / rel).read_bytes(), rel
