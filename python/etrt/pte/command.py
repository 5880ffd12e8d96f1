"""``python -m etrt.pte``: pack a JSON spec into a ``.pte`` (what CMake runs
at build time, see cmake/pte.cmake), or dump a ``.pte`` as JSON::

    python -m etrt.pte --spec spec.json --out model.pte [--depfile model.pte.d]
    python -m etrt.pte --dump model.pte
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import sys
from pathlib import Path
from typing import Any, List, Optional, Sequence

from .builder import DELEGATE_STORAGES
from .format import PteError
from .reader import read_pte
from .spec import load_spec
from .toolchain import ToolchainError

__all__ = ["main"]

def _jsonable(obj: Any) -> Any:
    if isinstance(obj, bytes):
        return {"bytes": len(obj), "sha256": hashlib.sha256(obj).hexdigest(),
                "head": obj[:16].hex()}
    if isinstance(obj, dict):
        return {k: _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, float) and not math.isfinite(obj):
        return str(obj)
    return obj


def _depfile_escape(p: str) -> str:
    return p.replace("\\", "\\\\").replace(" ", "\\ ").replace("#", "\\#").replace("$", "$$")


def main(argv: Optional[Sequence[str]] = None) -> int:
    """The ``python -m etrt.pte`` command; returns the exit status (1 on any error)."""
    ap = argparse.ArgumentParser(
        prog="python -m etrt.pte",
        description="Write a .pte from a JSON spec, or dump a .pte as JSON.")
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--spec", help="JSON spec to pack (see docs/pte-packer.md)")
    g.add_argument("--dump", metavar="PTE", help="print a .pte as JSON (blobs summarized)")
    ap.add_argument("--out", help="output .pte (with --spec)")
    ap.add_argument("--delegate-storage", choices=DELEGATE_STORAGES,
                    help="override the spec's delegate_storage")
    ap.add_argument("--depfile", help="write a Makefile-style depfile (with --spec)")
    args = ap.parse_args(argv)
    try:
        if args.dump:
            info = read_pte(args.dump)
            json.dump(_jsonable(info), sys.stdout, indent=2)
            sys.stdout.write("\n")
            return 0
        if not args.out:
            ap.error("--spec needs --out")
        deps: List[str] = []
        prog = load_spec(args.spec, deps)
        if args.delegate_storage:
            prog.delegate_storage = args.delegate_storage
        prog.write(args.out)
        if args.depfile:
            with open(args.depfile, "w", encoding="utf-8") as f:
                f.write(_depfile_escape(os.path.abspath(args.out)) + ": "
                        + " ".join(_depfile_escape(d) for d in
                                   [str(Path(args.spec).resolve()), *deps]) + "\n")
        return 0
    except (PteError, ToolchainError, OSError) as e:
        print(f"etrt.pte: error: {e}", file=sys.stderr)
        return 1
