"""`etrt inspect` and `etrt validate` on the largest files the runtime loads (docs/limits.md): metadata of exactly
16 MiB, a 64 MiB GPU-free NvInfer engine, 16 384 IO tensors, 65 536 profile entries. Each command runs in its own
process; its CPU time (user + system), wall time and peak RSS (ru_maxrss of the child, interpreter and libetrt included)
are printed, and the CPU time and the peak are checked against the tools' bounds, 10 s and 256 MB on a 2-core
machine, far above what they take (docs/limits.md has the measurements). CPU time, not wall time, is what is
bounded: it does not grow when other work shares the machine. A bound, not a benchmark: the numbers are printed
for the log (pytest -s).
"""

from __future__ import annotations

import os
import resource
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _generated import load_script

ROOT = Path(__file__).resolve().parents[2]
CPU_LIMIT_S = 10.0
MEMORY_LIMIT = 256 * 2**20


C = load_script(ROOT / "tests" / "adversarial" / "make_corpus.py")
E = C.E

_FNV_PRIME = 16777619


def _fnv(data: bytes, h: int = 2166136261) -> int:
    for b in data:
        h = ((h ^ b) * _FNV_PRIME) & 0xFFFFFFFF
    return h


def big_engine(constant_floats: int) -> bytes:
    """x float32 [4] -> identity -> y, carrying a zero float32 constant of ``constant_floats`` values. FNV-1a over n
    zero bytes multiplies by prime^n, so the checksum takes no pass over them."""
    body = E.payload(label="big", io=[E.inp("x", E.F32, [4]), E.out("y", E.F32, [4])], constants=[],
                     profiles=[[([4],) * 3]], ops=[E.op(E.IDENTITY, 0, o=1)], flags=0)
    # Splice one constant in where the empty constant table's count is.
    label_io = body[:body.index(struct.pack("<I", 0) + struct.pack("<I", 0) + struct.pack("<I", 1))]
    rest = body[len(label_io) + 4:]
    head = label_io + struct.pack("<I", 1) + E._str("w") + E._shape([constant_floats]) + struct.pack(
        "<Q", constant_floats)
    zeros = 4 * constant_floats
    h = _fnv(head)
    h = (h * pow(_FNV_PRIME, zeros, 2**32)) & 0xFFFFFFFF
    h = _fnv(rest, h)
    size = len(head) + zeros + len(rest)
    return b"ETRF" + struct.pack("<IQII", 2, size, h, 0) + head + bytes(zeros) + rest


def metadata_at_limit() -> bytes:
    md = {"io_bindings": [C.binding("x", True), C.binding("y", False)], "aliased_io": [],
          "hardware_compatible": False, "device_id": 0, "serialized_metadata": "", "target_platform": ""}
    fill = 16 * 2**20 - len(C.compact(md))
    md["serialized_metadata"] = "a" * fill
    text = C.compact(md)
    assert len(text) == 16 * 2**20
    return C.xy_program(C.raw_blob(text, E.engine(**E.ONE_IO)))


def engine_64_mib() -> bytes:
    engine = big_engine((64 * 2**20 - 200) // 4)
    assert 64 * 2**20 - 256 < len(engine) <= 64 * 2**20
    return C.xy_program(C.engine_blob(engine, [C.binding("x", True), C.binding("y", False)]))


def io_tensors_at_limit() -> bytes:
    n = 8192  # inputs, and as many outputs: 16 384 IO tensors
    bindings = [C.binding(f"i{k}", True, shape=(2,)) for k in range(n)] + [
        C.binding(f"o{k}", False, shape=(2,)) for k in range(n)]
    blob_bytes = C.engine_blob(C.wide_engine(n), bindings)
    return C.program(blob_bytes, [(f"i{k}", "float32", [2], False) for k in range(n)],
                     [(f"o{k}", "float32", [2], False) for k in range(n)])


def profile_entries_at_limit() -> bytes:
    n, profiles = 256, 256  # inputs x profiles = 65 536 entries, in the engine and in the blob's signature
    io = [E.inp(f"i{k}", E.F32, [1, -1]) for k in range(n)] + [E.out(f"o{k}", E.F32, [1, -1]) for k in range(n)]
    bounds = [[([1, 1], [1, p + 1], [1, p + 8])] * n for p in range(profiles)]
    engine = E.engine(label="profiles", io=io, profiles=bounds, ops=[E.op(E.IDENTITY, k, o=n + k) for k in range(n)],
                      flags=0)
    sig = C.signature([{"name": f"i{k}", "profiles": [{"min": [1, 1], "opt": [1, p + 1], "max": [1, p + 8]}
                                                      for p in range(profiles)]} for k in range(n)], profiles)
    bindings = [C.binding(f"i{k}", True, shape=(1, -1)) for k in range(n)] + [
        C.binding(f"o{k}", False, shape=(1, -1)) for k in range(n)]
    blob_bytes = C.engine_blob(engine, bindings, profile_signature=sig)
    return C.program(blob_bytes, [(f"i{k}", "float32", [1, 263], True) for k in range(n)],
                     [(f"o{k}", "float32", [1, 263], True) for k in range(n)])


CASES = {
    "metadata_16_mib": metadata_at_limit,
    "engine_64_mib": engine_64_mib,
    "io_tensors_16384": io_tensors_at_limit,
    "profile_entries_65536": profile_entries_at_limit,
}


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    out = tmp_path_factory.mktemp("at_limit")
    paths = {}
    for name, make in CASES.items():
        paths[name] = out / f"{name}.pte"
        paths[name].write_bytes(make())
    return paths


@pytest.mark.parametrize("command", ["inspect", "validate"])
@pytest.mark.parametrize("case", list(CASES))
def test_the_tools_are_bounded_on_the_largest_legal_files(files, case, command):
    status, output, wall, cpu, peak = run_tool_isolated(command, files[case])
    print(f"\n{command} {case}: {cpu:.2f} s CPU, {wall:.2f} s wall, peak RSS {peak / 2**20:.0f} MiB, exit {status}")
    assert "Traceback" not in output, output[-3000:]
    assert status == 0, output[-3000:]
    assert cpu <= CPU_LIMIT_S, f"{command} {case} took {cpu:.1f} s of CPU time"
    assert peak <= MEMORY_LIMIT, f"{command} {case} peaked at {peak / 2**20:.0f} MiB"


_MEASURE = r"""
import resource, subprocess, sys, time
start = time.perf_counter()
proc = subprocess.run([sys.executable, "-m", "etrt", *sys.argv[1:]], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
wall = time.perf_counter() - start
sys.stdout.buffer.write(proc.stdout)
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
print(f"\n@@usage {wall} {usage.ru_utime + usage.ru_stime} {usage.ru_maxrss}")
sys.exit(proc.returncode)
"""


def run_tool_isolated(command: str, path: Path):
    """As run_tool, measured by a fresh parent so that ru_maxrss is this command's alone."""
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    env.pop("ETRT_DEBUG", None)
    proc = subprocess.run([sys.executable, "-c", _MEASURE, command, str(path)], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, env=env, timeout=12 * CPU_LIMIT_S)
    text = proc.stdout.decode(errors="replace")
    head, _, usage = text.rpartition("\n@@usage ")
    wall, cpu, kib = usage.split()
    return proc.returncode, head, float(wall), float(cpu), int(kib) * 1024
