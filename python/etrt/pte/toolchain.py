"""Where flatc and ExecuTorch's program schema are, and running flatc."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import List, Sequence, Union

__all__ = ["SCHEMA_FILES", "Toolchain", "ToolchainError", "find_toolchain", "run_flatc"]

#: The schema files the packer needs, side by side in one directory.
SCHEMA_FILES = ("program.fbs", "scalar_type.fbs")


class ToolchainError(RuntimeError):
    """flatc or the ExecuTorch schema could not be found or run."""


@dataclass(frozen=True)
class Toolchain:
    """Where flatc and ExecuTorch's program schema live."""

    flatc: str
    schema_dir: str

    @property
    def program_fbs(self) -> str:
        return os.path.join(self.schema_dir, "program.fbs")


def _executorch_roots() -> List[Path]:
    """Candidate directories of an installed ``executorch`` package.

    The package is never imported (its __init__ needs torch); find_spec on a
    top-level name only locates it.
    """
    roots: List[Path] = []

    def add(p: Union[str, Path]) -> None:
        p = Path(p)
        if p.is_dir() and p not in roots:
            roots.append(p)

    try:
        spec = importlib.util.find_spec("executorch")
    except (ImportError, ValueError):
        spec = None
    if spec is not None:
        for loc in spec.submodule_search_locations or []:
            add(loc)
        if spec.origin and spec.origin not in ("namespace", "built-in"):
            add(Path(spec.origin).parent)
    for prefix in dict.fromkeys([sys.prefix, sys.exec_prefix, sys.base_prefix]):
        for sp in sorted(Path(prefix).glob("lib/python3*/site-packages/executorch")):
            add(sp)
        add(Path(prefix) / "Lib" / "site-packages" / "executorch")
    for entry in sys.path:
        if entry:
            add(Path(entry) / "executorch")
    return roots


def _is_executable(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


def find_toolchain() -> Toolchain:
    """Finds flatc and the schema directory.

    Order: ``$ETRT_FLATC`` / ``$ETRT_EXECUTORCH_SCHEMA_DIR``; else the
    executorch wheel visible to this interpreter (``data/bin/flatc``,
    ``exir/_serialize/program.fbs``); else ``flatc`` on PATH (the schema has
    no PATH fallback).
    """
    roots = _executorch_roots()

    flatc = os.environ.get("ETRT_FLATC")
    if flatc:
        if not _is_executable(flatc):
            raise ToolchainError(f"ETRT_FLATC={flatc!r} is not an executable file")
    else:
        for root in roots:
            cand = root / "data" / "bin" / "flatc"
            if _is_executable(str(cand)):
                flatc = str(cand)
                break
        else:
            flatc = shutil.which("flatc")
    if not flatc:
        raise ToolchainError(
            "flatc not found: set ETRT_FLATC, install the executorch wheel into this "
            f"interpreter ({sys.executable}), or put flatc on PATH")

    schema_dir = os.environ.get("ETRT_EXECUTORCH_SCHEMA_DIR")
    if schema_dir:
        missing = [f for f in SCHEMA_FILES if not os.path.isfile(os.path.join(schema_dir, f))]
        if missing:
            raise ToolchainError(
                f"ETRT_EXECUTORCH_SCHEMA_DIR={schema_dir!r} lacks {', '.join(missing)}")
    else:
        for root in roots:
            cand = root / "exir" / "_serialize"
            if all((cand / f).is_file() for f in SCHEMA_FILES):
                schema_dir = str(cand)
                break
    if not schema_dir:
        raise ToolchainError(
            "ExecuTorch schema (program.fbs, scalar_type.fbs) not found: set "
            "ETRT_EXECUTORCH_SCHEMA_DIR or install the executorch wheel into this "
            f"interpreter ({sys.executable})")
    return Toolchain(flatc=flatc, schema_dir=schema_dir)


def run_flatc(toolchain: Toolchain, args: Sequence[str], what: str, timeout: float = 900) -> None:
    """Runs flatc with ``args``; ``what`` says what for (``"decoding the
    program"``) in the ToolchainError raised when it cannot run or fails."""
    try:
        proc = subprocess.run([toolchain.flatc, *args], capture_output=True, timeout=timeout)
    except OSError as e:
        raise ToolchainError(f"cannot run flatc ({toolchain.flatc}): {e}") from e
    except subprocess.TimeoutExpired as e:
        raise ToolchainError(f"flatc timed out after {timeout:.0f}s while {what}") from e
    if proc.returncode != 0:
        out = (proc.stderr or b"") + (proc.stdout or b"")
        # flatc prints its whole usage text before the error; keep the tail.
        text = out.decode(errors="replace").strip()
        if "error:" in text:
            text = text[text.rindex("error:"):]
        sig = f" (signal {-proc.returncode})" if proc.returncode < 0 else ""
        raise ToolchainError(f"flatc failed{sig} while {what}: {text[-2000:]}")
