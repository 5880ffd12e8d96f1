"""Builds the etrt package: the pure-Python export side (etrt.pte, etrt.blob,
etrt.validate, the `etrt` command, ...) and, by default, the native runtime
that etrt.runtime loads into ExecuTorch's Python runtime.

    pip install ./python                 # from an etrt checkout, into an environment that has ExecuTorch

The native part is libetrt (and beside it the GPU-free NvInfer and
libetrt_tools, which the tools read blobs and engines with), built with
CMake from the checkout against the ExecuTorch wheel *of the environment being
installed into*, and installed inside the package (etrt/_native/) with a
RUNPATH relative to itself ($ORIGIN/../../../executorch/lib: that wheel's
libraries), never into a build tree. The package then requires exactly that
ExecuTorch version: etrt built against ExecuTorch X runs with ExecuTorch X.

Environment:
  ETRT_NATIVE=0           the export side only: no C++ build, no ExecuTorch requirement
  ETRT_EXECUTORCH_DIR     the executorch package directory to build against (default: the environment's)
  ETRT_CMAKE_ARGS         extra CMake arguments, e.g. "-DETRT_WITH_CUDA=ON"
  ETRT_BUILD_TYPE         CMake build type (default Release)
  ETRT_JOBS               parallel build jobs (default: all cores)
  ETRT_PYTHON_BUILD_DIR   where the CMake build lives (default: <checkout>/build-python/<tag>, reused, so a
                          reinstall rebuilds only what changed)

Needs a C++17 compiler and nlohmann-json (Debian: g++, nlohmann-json3-dev; scripts/bootstrap.sh installs
them); CMake and Ninja come from PyPI as build requirements.
"""

import hashlib
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
NATIVE = os.environ.get("ETRT_NATIVE", "1") != "0"
# The installed library's search path: itself ($ORIGIN: the GPU-free NvInfer beside it), then the ExecuTorch
# wheel's libraries (site-packages/etrt/_native/lib -> site-packages/executorch/lib).
INSTALL_RPATH = "$ORIGIN:$ORIGIN/../../../executorch/lib"
LIBRARIES = ("libetrt.so.0", "libetrt_gpufree_nvinfer.so.0", "libetrt_tools.so.0")


class BuildError(RuntimeError):
    pass


def _is_checkout(root):
    path = os.path.join(root, "CMakeLists.txt")
    if not os.path.isfile(path):
        return False
    with open(path) as f:
        return re.search(r"project\(etrt\b", f.read()) is not None


def _executorch_version(package_dir):
    site = os.path.dirname(package_dir)
    for name in sorted(os.listdir(site)):
        if name.startswith("executorch-") and name.endswith(".dist-info"):
            with open(os.path.join(site, name, "METADATA"), encoding="utf-8") as f:
                for line in f:
                    if line.startswith("Version:"):
                        return line.split(":", 1)[1].strip()
    return None


def find_executorch():
    """The executorch package directory to build against and its version.

    pip builds in an isolated environment whose sys.path hides the target's
    site-packages, but the interpreter (and sys.prefix) is the target's, so its
    site-packages are still where sysconfig says."""
    candidates = []
    if os.environ.get("ETRT_EXECUTORCH_DIR"):
        candidates.append(os.environ["ETRT_EXECUTORCH_DIR"])
    else:
        import importlib.util

        spec = importlib.util.find_spec("executorch")
        if spec is not None and spec.submodule_search_locations:
            candidates.extend(spec.submodule_search_locations)
        for key in ("purelib", "platlib"):
            candidates.append(os.path.join(sysconfig.get_paths()[key], "executorch"))
    for candidate in candidates:
        candidate = os.path.abspath(candidate)
        config = os.path.join(candidate, "lib", "cmake", "executorch", "executorch-config.cmake")
        runtime = os.path.join(candidate, "lib", "libexecutorch.so")
        if os.path.isfile(config) and os.path.isfile(runtime):
            version = _executorch_version(candidate)
            if version is None:
                raise BuildError(f"found ExecuTorch at {candidate} but no executorch-*.dist-info beside it, so its "
                                 "version is unknown; install it with pip")
            return candidate, version
    raise BuildError(
        "etrt's native runtime is built against the ExecuTorch wheel of the environment it is installed into, and "
        f"there is none (looked in: {', '.join(dict.fromkeys(candidates)) or 'nowhere'}). Install ExecuTorch first "
        "(e.g. `pip install executorch==1.5.1 torch==2.14.0`), set ETRT_EXECUTORCH_DIR to an executorch package "
        "directory, or install the export side alone with ETRT_NATIVE=0")


def _find_cmake():
    cmake = shutil.which("cmake")
    if cmake is None:
        raise BuildError("no cmake on PATH (the build requirement cmake>=3.28 provides one under pip)")
    out = subprocess.run([cmake, "--version"], capture_output=True, text=True).stdout
    m = re.search(r"version (\d+)\.(\d+)", out)
    if not m or (int(m.group(1)), int(m.group(2))) < (3, 28):
        raise BuildError(f"{cmake} is too old ({out.splitlines()[0] if out else '?'}): ExecuTorch's CMake package "
                         "needs 3.28 or newer")
    return cmake


def _run(cmd, **kwargs):
    print("etrt:", " ".join(shlex.quote(c) for c in cmd), flush=True)
    subprocess.run(cmd, check=True, **kwargs)


def build_native(executorch_dir, executorch_version, package_out):
    """Configures, builds and installs libetrt and libetrt_tools; copies the result into package_out/_native."""
    if not _is_checkout(ROOT):
        raise BuildError(f"{ROOT} is not an etrt checkout: the native runtime is built from one "
                         "(`pip install ./python` in the checkout), or install with ETRT_NATIVE=0")
    build_type = os.environ.get("ETRT_BUILD_TYPE", "Release")
    tag = f"et{executorch_version}-{hashlib.sha1(executorch_dir.encode()).hexdigest()[:8]}-{build_type.lower()}"
    build_dir = os.environ.get("ETRT_PYTHON_BUILD_DIR") or os.path.join(ROOT, "build-python", tag)
    stage = os.path.join(build_dir, "stage")
    cmake = _find_cmake()
    configure = [cmake, "-S", ROOT, "-B", build_dir, f"-DCMAKE_BUILD_TYPE={build_type}",
                 "-DETRT_BUILD_TESTS=OFF", "-DETRT_BUILD_BENCHMARKS=OFF", "-DETRT_BUILD_EXAMPLES=OFF",
                 f"-Dexecutorch_DIR={os.path.join(executorch_dir, 'lib', 'cmake', 'executorch')}",
                 f"-DETRT_INSTALL_RPATH={INSTALL_RPATH}", "-DCMAKE_INSTALL_LIBDIR=lib"]
    # pip builds in a fresh temporary environment each time, so the Ninja (and CMake) of the previous build may be
    # gone: name the current Ninja every time, and start over when the generator would change.
    ninja = shutil.which("ninja")
    generator = "Ninja" if ninja else "Unix Makefiles"
    cache = os.path.join(build_dir, "CMakeCache.txt")
    if os.path.isfile(cache):
        with open(cache, encoding="utf-8", errors="replace") as f:
            cached = re.search(r"^CMAKE_GENERATOR:INTERNAL=(.*)$", f.read(), re.M)
        if cached is None or cached.group(1) != generator:
            os.remove(cache)
            shutil.rmtree(os.path.join(build_dir, "CMakeFiles"), ignore_errors=True)
    configure += ["-G", generator]
    if ninja:
        configure.append(f"-DCMAKE_MAKE_PROGRAM={ninja}")
    configure += shlex.split(os.environ.get("ETRT_CMAKE_ARGS", ""))
    _run(configure)
    jobs = os.environ.get("ETRT_JOBS") or str(os.cpu_count() or 1)
    _run([cmake, "--build", build_dir, "--target", "etrt", "etrt_tools", "--parallel", jobs])
    shutil.rmtree(stage, ignore_errors=True)
    _run([cmake, "--install", build_dir, "--prefix", stage])

    native = os.path.join(package_out, "_native")
    shutil.rmtree(native, ignore_errors=True)
    shutil.copytree(os.path.join(stage, "include"), os.path.join(native, "include"))
    # Wheels cannot hold symbolic links: each library goes in once, under its soname (what the loader and the
    # runners linking it look for), and the CMake package is pointed at that name.
    lib_out = os.path.join(native, "lib")
    os.makedirs(lib_out)
    renames = {}
    for name in LIBRARIES:
        source = os.path.join(stage, "lib", name)
        if not os.path.exists(source):
            raise BuildError(f"the install step left no {name} in {stage}/lib")
        renames[os.path.basename(os.path.realpath(source))] = name
        shutil.copyfile(os.path.realpath(source), os.path.join(lib_out, name))
        os.chmod(os.path.join(lib_out, name), 0o755)
    cmake_out = os.path.join(lib_out, "cmake", "etrt")
    shutil.copytree(os.path.join(stage, "lib", "cmake", "etrt"), cmake_out)
    for name in os.listdir(cmake_out):
        path = os.path.join(cmake_out, name)
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for real, soname in renames.items():
            text = text.replace(f"/{real}\"", f"/{soname}\"")
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    return build_type


class BuildPyWithNative(build_py):
    """build_py, plus the native runtime and a record of what it was built against."""

    def run(self):
        super().run()
        if not NATIVE or getattr(self, "editable_mode", False):
            return
        executorch_dir, executorch_version = find_executorch()
        package_out = os.path.join(self.build_lib, "etrt")
        build_type = build_native(executorch_dir, executorch_version, package_out)
        with open(os.path.join(package_out, "_build_info.py"), "w", encoding="utf-8") as f:
            f.write('"""Written by python/setup.py when it built the native runtime."""\n')
            f.write(f"ETRT_VERSION = {VERSION!r}\nABI_VERSION = {ABI_VERSION}\n")
            f.write(f"EXECUTORCH_VERSION = {executorch_version!r}\nEXECUTORCH_DIR = {executorch_dir!r}\n")
            f.write(f"BUILD_TYPE = {build_type!r}\n")


class NativeDistribution(Distribution):
    def has_ext_modules(self):  # a platform wheel: it carries shared libraries
        return NATIVE


def _read_version():
    with open(os.path.join(HERE, "etrt", "__init__.py"), encoding="utf-8") as f:
        return re.search(r'^__version__ = "([^"]+)"', f.read(), re.M).group(1)


def _read_abi_version():
    with open(os.path.join(ROOT, "include", "etrt", "c_api.h"), encoding="utf-8") as f:
        return int(re.search(r"#define ETRT_ABI_VERSION (\d+)", f.read()).group(1))


VERSION = _read_version()
ABI_VERSION = _read_abi_version() if NATIVE else 0

install_requires = []
if NATIVE:
    try:
        _et_dir, _et_version = find_executorch()
    except BuildError as e:
        sys.exit(f"etrt: {e}")
    # The ExecuTorch the native runtime is built against, exactly.
    install_requires.append(f"executorch=={_et_version}")
# setuptools' own build directory: in a checkout, under build-python/ (ignored by git) rather than python/build/,
# one per target environment.
build_base = None
if _is_checkout(ROOT):
    build_base = os.path.join(ROOT, "build-python", "setuptools-" + hashlib.sha1(sys.prefix.encode()).hexdigest()[:8])

setup(
    distclass=NativeDistribution,
    cmdclass={"build_py": BuildPyWithNative},
    install_requires=install_requires,
    options={"build": {"build_base": build_base}} if build_base else {},
)
