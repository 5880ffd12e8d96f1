"""Where etrt's native runtime lives in an installed package, and what it was
built against. Loads nothing (see :mod:`etrt.runtime` for that).

``pip install ./python`` builds libetrt against the ExecuTorch wheel of the
environment and installs it inside the package, as an install prefix::

    site-packages/etrt/_native/lib/libetrt.so.0                 RUNPATH $ORIGIN:$ORIGIN/../../../executorch/lib
    site-packages/etrt/_native/lib/libetrt_gpufree_nvinfer.so.0  (the GPU-free NvInfer, beside it)
    site-packages/etrt/_native/lib/libetrt_tools.so.0           what the tools ask the runtime, beside it
    site-packages/etrt/_native/include/etrt/*.h                  the C++ and C API
    site-packages/etrt/_native/lib/cmake/etrt/                   find_package(etrt CONFIG)

and records the ExecuTorch version it was built against in
``etrt/_build_info.py``. A C++ runner can build against the same files::

    cmake -DCMAKE_PREFIX_PATH="$(python -m etrt.native --cmake-prefix-path)" ...

``python -m etrt.native`` prints a summary; ``--library``, ``--prefix`` and
``--cmake-prefix-path`` print one path each.
"""

from __future__ import annotations

import os
import struct
import sys
from dataclasses import dataclass, field
from typing import Dict, List, Optional

__all__ = [
    "BuildInfo",
    "ElfDynamic",
    "build_info",
    "cmake_prefix_path",
    "executorch_root",
    "library_path",
    "native_prefix",
    "read_elf_dynamic",
    "resolve_needed",
    "tools_library_path",
]

LIBRARY_NAME = "libetrt.so.0"
NVINFER_NAME = "libetrt_gpufree_nvinfer.so.0"
TOOLS_LIBRARY_NAME = "libetrt_tools.so.0"
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


@dataclass(frozen=True)
class BuildInfo:
    """What ``pip install`` recorded when it built the native runtime."""

    etrt_version: str
    abi_version: int
    executorch_version: str
    #: the ExecuTorch package directory it was built against (informational: the installed library finds
    #: ExecuTorch relative to itself, never through this path)
    executorch_dir: str
    build_type: str


def build_info() -> Optional[BuildInfo]:
    """The installed package's build record, or None in a source checkout (nothing was built)."""
    try:
        from . import _build_info  # type: ignore[attr-defined]
    except ImportError:
        return None
    return BuildInfo(
        etrt_version=_build_info.ETRT_VERSION,
        abi_version=_build_info.ABI_VERSION,
        executorch_version=_build_info.EXECUTORCH_VERSION,
        executorch_dir=_build_info.EXECUTORCH_DIR,
        build_type=_build_info.BUILD_TYPE,
    )


def native_prefix() -> str:
    """The install prefix of the packaged native runtime (it may not exist)."""
    return os.path.join(_PACKAGE_DIR, "_native")


def library_path() -> Optional[str]:
    """The libetrt :mod:`etrt.runtime` loads: ``$ETRT_LIBRARY`` when set, else the packaged one, else None."""
    override = os.environ.get("ETRT_LIBRARY")
    if override:
        return os.path.abspath(override)
    packaged = os.path.join(native_prefix(), "lib", LIBRARY_NAME)
    return packaged if os.path.isfile(packaged) else None


def tools_library_path() -> Optional[str]:
    """The libetrt_tools the tools load (:mod:`etrt._reader`): the one beside the libetrt :func:`library_path` names
    (``$ETRT_LIBRARY``'s folder, else the packaged one), where every build and installation puts it; else None."""
    library = library_path()
    if library is None:
        return None
    beside = os.path.join(os.path.dirname(library), TOOLS_LIBRARY_NAME)
    return beside if os.path.isfile(beside) else None


def executorch_root() -> Optional[str]:
    """The directory of the ``executorch`` package this interpreter imports, found without importing it."""
    import importlib.util

    spec = importlib.util.find_spec("executorch")
    if spec is None or not spec.submodule_search_locations:
        return None
    return os.path.abspath(list(spec.submodule_search_locations)[0])


def cmake_prefix_path() -> str:
    """``CMAKE_PREFIX_PATH`` for a C++ runner that links the installed etrt (and the ExecuTorch it uses)."""
    parts = [native_prefix()]
    root = executorch_root()
    if root:
        parts.append(root)
    return ";".join(parts)


# --------------------------------------------------------------------------
# ELF: what a shared library needs and where it looks for it


@dataclass
class ElfDynamic:
    needed: List[str] = field(default_factory=list)
    runpath: List[str] = field(default_factory=list)
    rpath: List[str] = field(default_factory=list)
    soname: Optional[str] = None


_DT_NEEDED, _DT_STRTAB, _DT_SONAME, _DT_RPATH, _DT_RUNPATH = 1, 5, 14, 15, 29
_PT_LOAD, _PT_DYNAMIC = 1, 2


def read_elf_dynamic(path: str) -> ElfDynamic:
    """DT_NEEDED, DT_RUNPATH, DT_RPATH and DT_SONAME of a 64-bit little-endian
    ELF shared library (what ``readelf -d`` shows). Raises ValueError for
    anything else."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise ValueError(f"{path}: not a 64-bit little-endian ELF file")
    e_phoff, = struct.unpack_from("<Q", data, 0x20)
    e_phentsize, e_phnum = struct.unpack_from("<HH", data, 0x36)
    loads, dynamic = [], None
    for i in range(e_phnum):
        offset = e_phoff + i * e_phentsize
        p_type, _, p_offset, p_vaddr, _, p_filesz, _, _ = struct.unpack_from("<IIQQQQQQ", data, offset)
        if p_type == _PT_LOAD:
            loads.append((p_vaddr, p_offset, p_filesz))
        elif p_type == _PT_DYNAMIC:
            dynamic = (p_offset, p_filesz)
    if dynamic is None:
        raise ValueError(f"{path}: no dynamic section (not a shared library?)")
    entries = []
    for off in range(dynamic[0], dynamic[0] + dynamic[1], 16):
        tag, value = struct.unpack_from("<qQ", data, off)
        if tag == 0:
            break
        entries.append((tag, value))
    strtab_vaddr = next((v for t, v in entries if t == _DT_STRTAB), None)
    strtab = next((off + strtab_vaddr - vaddr for vaddr, off, size in loads
                   if strtab_vaddr is not None and vaddr <= strtab_vaddr < vaddr + size), None)
    if strtab is None:
        raise ValueError(f"{path}: no string table for the dynamic section")

    def string(offset: int) -> str:
        end = data.index(b"\x00", strtab + offset)
        return data[strtab + offset:end].decode("utf-8", errors="replace")

    out = ElfDynamic()
    for tag, value in entries:
        if tag == _DT_NEEDED:
            out.needed.append(string(value))
        elif tag == _DT_RUNPATH:
            out.runpath.extend(p for p in string(value).split(":") if p)
        elif tag == _DT_RPATH:
            out.rpath.extend(p for p in string(value).split(":") if p)
        elif tag == _DT_SONAME:
            out.soname = string(value)
    return out


def resolve_needed(library: str, name: str) -> Optional[str]:
    """Where ``library``'s own search path (DT_RUNPATH, else DT_RPATH, with
    ``$ORIGIN`` expanded) finds ``name``, or None when it finds it nowhere
    (the loader would then take a copy already in the process, or search
    LD_LIBRARY_PATH and the system paths)."""
    dyn = read_elf_dynamic(library)
    origin = os.path.dirname(os.path.realpath(library))
    for entry in dyn.runpath or dyn.rpath:
        directory = entry.replace("${ORIGIN}", origin).replace("$ORIGIN", origin)
        candidate = os.path.join(directory, name)
        if os.path.isfile(candidate):
            return os.path.realpath(candidate)
    return None


def _summary() -> Dict[str, object]:
    info = build_info()
    return {
        "library": library_path(),
        "tools_library": tools_library_path(),
        "prefix": native_prefix(),
        "built_against_executorch": info.executorch_version if info else None,
        "etrt_version": info.etrt_version if info else None,
        "abi_version": info.abi_version if info else None,
        "executorch_root": executorch_root(),
        "cmake_prefix_path": cmake_prefix_path(),
    }


def main(argv: Optional[List[str]] = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args == ["--library"]:
        path = library_path()
        if path is None:
            print("etrt: the native runtime is not installed (pip install ./python builds it)", file=sys.stderr)
            return 1
        print(path)
    elif args == ["--prefix"]:
        print(native_prefix())
    elif args == ["--cmake-prefix-path"]:
        print(cmake_prefix_path())
    elif not args:
        for key, value in _summary().items():
            print(f"{key}: {value}")
    else:
        print("usage: python -m etrt.native [--library | --prefix | --cmake-prefix-path]", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
