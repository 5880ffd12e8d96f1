"""scripts/free_disk_for_exports.sh, which scripts/test.sh runs before it installs .venv-export: with enough free disk
it does nothing; short of it, it removes the build trees whose tests have run (never build/) and, still short, stops
the run naming what is free and what is needed; once .venv-export is there, it does nothing at all."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "free_disk_for_exports.sh"
TREES = ("build", "build-asan", "build-cuda", "build-fuzz", "build-tsan")


def checkout(tmp_path: Path) -> Path:
    for tree in TREES:
        (tmp_path / tree).mkdir()
        (tmp_path / tree / "object.o").write_bytes(b"\0" * 64)
    return tmp_path


def run(root: Path, need_gib: int) -> subprocess.CompletedProcess:
    env = {**os.environ, "ETRT_EXPORT_NEEDS_GIB": str(need_gib)}
    return subprocess.run(["bash", str(SCRIPT), str(root)], env=env, capture_output=True, text=True, timeout=60)


def present(root: Path):
    return [t for t in TREES if (root / t).exists()]


def test_with_enough_disk_nothing_is_removed(tmp_path):
    root = checkout(tmp_path)
    p = run(root, 0)
    assert p.returncode == 0, p.stderr
    assert present(root) == list(TREES) and p.stdout == ""


def test_short_of_disk_the_finished_trees_go_and_the_run_stops_naming_the_shortfall(tmp_path):
    root = checkout(tmp_path)
    p = run(root, 10**9)  # more than any disk has
    assert p.returncode == 1
    assert present(root) == ["build"]
    assert "removing build-asan, build-cuda, build-fuzz and build-tsan" in p.stdout
    assert "GiB free on" in p.stderr and "needs about 1000000000 GiB for .venv-export" in p.stderr


def test_once_the_export_environment_is_there_nothing_is_removed(tmp_path):
    root = checkout(tmp_path)
    (root / ".venv-export" / "bin").mkdir(parents=True)
    python = root / ".venv-export" / "bin" / "python"
    python.write_text("#!/bin/sh\n")
    python.chmod(0o755)
    p = run(root, 10**9)
    assert p.returncode == 0, p.stderr
    assert present(root) == list(TREES)
