"""The real-export suite: models exported through ExecuTorch's own pipeline and
run through ExecuTorch's Python runtime with etrt.runtime and through C++
Module, against eager PyTorch.

Runs in .venv-export (executorch + torch from PyPI, and this etrt
pip-installed into it; scripts/test.sh sets it up). The etrt imported is the
installed package, not the checkout's python/ directory.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path
from typing import Any, Dict

import pytest

ROOT = Path(__file__).resolve().parents[2]

try:
    import torch  # noqa: F401
    import executorch.runtime  # noqa: F401
except ImportError as _e:  # pragma: no cover - wrong interpreter
    collect_ignore_glob = ["test_*.py"]
    print(f"tests/export: skipped, no ExecuTorch Python runtime here ({_e}); run it in .venv-export "
          "(scripts/test.sh)", file=sys.stderr)
else:
    warnings.filterwarnings("ignore", module="executorch")
    warnings.filterwarnings("ignore", module="torch")


def pytest_configure(config):
    # ExecuTorch's and torch's own notices, not findings of these tests.
    for line in ("ignore::DeprecationWarning", "ignore:Mutation on a buffer in the model is detected:UserWarning",
                 "ignore:This API is experimental"):
        config.addinivalue_line("filterwarnings", line)


@pytest.fixture(scope="session")
def rt():
    """etrt.runtime of the installed package, loaded into this process."""
    import etrt

    if Path(etrt.__file__).resolve().is_relative_to(ROOT / "python"):
        pytest.fail(f"tests/export must run against the pip-installed etrt, not {etrt.__file__}")
    import etrt.runtime

    return etrt.runtime


@pytest.fixture(scope="session")
def pte_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("pte")


@pytest.fixture(scope="session")
def exported(pte_dir):
    """Exports each case of models.CASES once: name -> Exported."""
    import harness
    import models

    cache: Dict[str, Any] = {}

    def get(name: str):
        if name not in cache:
            cache[name] = harness.export_case(models.CASES[name], pte_dir)
        return cache[name]

    return get


@pytest.fixture(scope="session")
def runner() -> Path:
    """The C++ runner (tests/export/runner), built against the installed etrt."""
    import harness

    return harness.build_runner(ROOT / "build-export" / "runner")
