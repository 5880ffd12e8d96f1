"""Programs ExecuTorch 1.5.1's exporter writes, committed for the C++ suite (tests/backend/fixtures), which runs
without torch: what real users' tools write, not what the project's packer writes.

  exported_kv_owned.pte  models.KvCache exported as the case kv_owned (a KV cache the delegate owns, zeros to start):
                         the exporter writes no named_data table, so ExecuTorch hands the delegate no NamedDataMap.

Run with the export environment from the checkout's root (the files are written into DIR, by default the committed
folder):

  PYTHONPATH=python:tests/export .venv-export/bin/python tests/export/make_backend_fixtures.py [DIR]

Run in a fresh process: the test partitioner labels engines by how many it translated before. test_state_sessions.py
checks that the committed files are what this writes now."""

from __future__ import annotations

import sys
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "backend" / "fixtures"
CASES = {"exported_kv_owned": "kv_owned"}


def write_all(directory: Path) -> None:
    import harness
    import models

    directory.mkdir(parents=True, exist_ok=True)
    for name, case in CASES.items():
        exported = harness.export_case(models.CASES[case], directory)
        exported.path.rename(directory / f"{name}.pte")


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    write_all(Path(sys.argv[1]) if len(sys.argv) > 1 else FIXTURES)
