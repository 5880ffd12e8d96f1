"""`pip install ./python` into a fresh virtual environment that has ExecuTorch:
the build finds that environment's ExecuTorch, the installed libetrt looks for
it relative to itself (never into a build tree), and importing etrt.runtime
there loads it beside the one libexecutorch.so of ExecuTorch's Python
bindings.

The fresh environment gets its own ExecuTorch (`pip install --no-deps
executorch==X`, from pip's cache after the first time); torch and
ExecuTorch's other dependencies are shared from this environment through a
.pth file, which saves installing 6 GB again. ETRT_FRESH_VENV_FULL=1 installs
`executorch==X torch==Y` into it with their dependencies instead.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import textwrap
from importlib.metadata import version as dist_version
from pathlib import Path

import pytest

from harness import ROOT

PROBE = textwrap.dedent("""
    import json, os, sys, warnings
    warnings.filterwarnings("ignore")
    import etrt.runtime as rt
    from etrt import native
    from executorch.runtime import Runtime
    import torch
    maps = sorted({os.path.realpath(l.split()[-1]) for l in open("/proc/self/maps")
                   if os.path.basename(l.split()[-1]).startswith("libexecutorch.so")})
    lib = rt.library_path()
    nvinfer = os.path.join(os.path.dirname(lib), "libetrt_gpufree_nvinfer.so.0")
    method = Runtime.get().load_program(sys.argv[1]).load_method("forward")
    with rt.profile(0), rt.report() as r:
        out = method.execute([torch.ones(1, 4)])
    print(json.dumps({
        "library": lib, "executorch_library": rt.executorch_library(), "maps": maps,
        "runpath": native.read_elf_dynamic(lib).runpath, "nvinfer_runpath": native.read_elf_dynamic(nvinfer).runpath,
        "registered": Runtime.get().backend_registry.registered_backend_names,
        "built_against": native.build_info().executorch_version, "profiles": r.profiles,
        "output": out[0].tolist(), "etrt": os.path.dirname(__import__("etrt").__file__),
    }))
""")


def _run(cmd, **kw):
    p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)
    assert p.returncode == 0, f"{' '.join(map(str, cmd))}\n{p.stdout[-4000:]}\n{p.stderr[-4000:]}"
    return p


def _share_dependencies(site: Path) -> Path:
    """A directory of links to this environment's packages except etrt and executorch, for a .pth file."""
    shared = site.parent / "shared-from-test-env"
    shared.mkdir()
    mine = Path(sysconfig.get_paths()["purelib"])
    for entry in mine.iterdir():
        name = entry.name.lower()
        if name.startswith(("etrt", "executorch", "pip", "setuptools", "_distutils_hack", "distutils-precedence",
                            "__pycache__")):
            continue
        (shared / entry.name).symlink_to(entry)
    return shared


def test_pip_install_into_a_fresh_venv_with_executorch(tmp_path, exported):
    pte = exported("static").path
    # A fixed place, made anew each time: the package's CMake build directory is keyed by the ExecuTorch it builds
    # against, so a fixed path keeps it to one directory (build-python/) across runs.
    venv = ROOT / "build-export" / "fresh-venv"
    shutil.rmtree(venv, ignore_errors=True)
    _run([sys.executable, "-m", "venv", venv])
    py = venv / "bin" / "python"
    site = Path(_run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip())
    et_version = dist_version("executorch")
    if os.environ.get("ETRT_FRESH_VENV_FULL") == "1":
        _run([py, "-m", "pip", "install", "-q", f"executorch=={et_version}", f"torch=={dist_version('torch')}"])
    else:
        _run([py, "-m", "pip", "install", "-q", "--no-deps", f"executorch=={et_version}"])
        (site / "zz-shared-from-test-env.pth").write_text(str(_share_dependencies(site)) + "\n")

    # The package, built against that environment's ExecuTorch (pip's build isolation included).
    _run([py, "-m", "pip", "install", "-q", ROOT / "python"], cwd=tmp_path)

    # Its metadata pins the ExecuTorch it was built against.
    requires = _run([py, "-c", "from importlib.metadata import requires; print(requires('etrt'))"]).stdout
    assert f"executorch=={et_version}" in requires

    probe = tmp_path / "probe.py"
    probe.write_text(PROBE)
    result = json.loads(_run([py, probe, pte], cwd=tmp_path).stdout.strip().splitlines()[-1])
    et_lib = os.path.realpath(site / "executorch" / "lib" / "libexecutorch.so")
    assert result["etrt"] == str(site / "etrt")
    assert result["library"] == str(site / "etrt" / "_native" / "lib" / "libetrt.so.0")
    assert result["runpath"] == ["$ORIGIN", "$ORIGIN/../../../executorch/lib"]
    assert all(entry.startswith("$ORIGIN") for entry in result["nvinfer_runpath"])
    assert result["maps"] == [et_lib] and result["executorch_library"] == et_lib
    assert "TensorRTBackend" in result["registered"]
    assert result["built_against"] == et_version
    assert result["profiles"] == [0] and len(result["output"][0]) == 4

    # No file of the package names a build tree or this test's paths (a RUNPATH would).
    for lib in (site / "etrt" / "_native" / "lib").glob("*.so*"):
        data = lib.read_bytes()
        for forbidden in (str(ROOT / "build").encode(), b"/.venv", str(ROOT / "build-export").encode()):
            assert forbidden not in data, (lib, forbidden)

    # The console script and the C++ package came with it.
    p = _run([venv / "bin" / "etrt", "validate", pte])
    assert "OK" in p.stdout
    cmake_dir = site / "etrt" / "_native" / "lib" / "cmake" / "etrt"
    assert (cmake_dir / "etrtConfig.cmake").exists()
    targets = "".join(f.read_text() for f in cmake_dir.glob("etrtTargets*.cmake"))
    assert "libetrt.so.0\"" in targets and "libetrt.so.0.1.0" not in targets


def test_import_refuses_an_executorch_that_is_not_the_one_built_against(tmp_path):
    import etrt
    from etrt import native

    info = native.build_info()
    if info is None:
        pytest.skip("not an installed etrt")
    # A copy of the installed package whose build record names another ExecuTorch.
    pkg = tmp_path / "etrt"
    shutil.copytree(os.path.dirname(etrt.__file__), pkg, ignore=shutil.ignore_patterns("__pycache__"))
    record = (pkg / "_build_info.py").read_text().replace(f"EXECUTORCH_VERSION = {info.executorch_version!r}",
                                                          "EXECUTORCH_VERSION = '0.0.1'")
    (pkg / "_build_info.py").write_text(record)
    p = subprocess.run([sys.executable, "-c", "import etrt.runtime"], capture_output=True, text=True, cwd=tmp_path,
                       env={**os.environ, "PYTHONPATH": str(tmp_path)})
    assert p.returncode != 0
    assert "built against ExecuTorch 0.0.1" in p.stderr and f"has ExecuTorch {dist_version('executorch')}" in p.stderr
    assert "etrt built against ExecuTorch X runs with ExecuTorch X" in p.stderr


def test_import_refuses_a_library_that_would_use_another_libexecutorch(tmp_path):
    """ETRT_LIBRARY at a libetrt whose RUNPATH finds another libexecutorch.so: refused before loading, naming both."""
    import etrt
    from etrt import native

    installed = Path(os.path.dirname(etrt.__file__)) / "_native" / "lib"
    if not installed.exists():
        pytest.skip("not an installed etrt")
    # The package's layout in another site-packages, whose executorch/lib holds a copy of libexecutorch.so.
    site = tmp_path / "site-packages"
    lib = site / "etrt" / "_native" / "lib"
    lib.mkdir(parents=True)
    for name in ("libetrt.so.0", "libetrt_gpufree_nvinfer.so.0"):
        shutil.copy(installed / name, lib / name)
    other = site / "executorch" / "lib" / "libexecutorch.so"
    other.parent.mkdir(parents=True)
    shutil.copy(os.path.join(native.executorch_root(), "lib", "libexecutorch.so"), other)
    p = subprocess.run([sys.executable, "-c", "import etrt.runtime"], capture_output=True, text=True,
                       env={**os.environ, "ETRT_LIBRARY": str(lib / "libetrt.so.0")})
    assert p.returncode != 0
    bindings = os.path.realpath(os.path.join(native.executorch_root(), "lib", "libexecutorch.so"))
    assert f"would use {other}, but ExecuTorch's Python bindings use {bindings}" in p.stderr, p.stderr
