"""Delegate-owned state belongs to one load (docs/design.md, decision 18), on programs ExecuTorch 1.5.1's exporter
wrote and ExecuTorch's Python runtime loads: each ``Runtime.load_program`` keeps its own cache, the methods of one
loaded program share one by name, and a load after the last one was destroyed starts from the initial values.

kv_owned's cache starts as zeros, so the exporter writes no named_data table and ExecuTorch hands the delegate no
NamedDataMap: nothing of the program tells two loads apart, only the load itself (its method allocator)."""

from __future__ import annotations

import gc
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from torch.export import Dim

import harness
import models
from harness import load_method, run_py

HERE = Path(__file__).resolve().parent
CACHE_BYTES = 16 * 4 * 4  # KvCache's [1, 16, 4] float32


def eager(model, *inputs):
    with torch.no_grad():
        return list(model(*inputs))


def step(x_seed: int, n: int, pos: int):
    x = torch.randn(1, n, 4, generator=torch.Generator().manual_seed(x_seed))
    return {"inputs": [x, torch.tensor([pos])]}


STEPS = [(3, 0), (1, 3), (4, 4), (1, 8)]  # (rows, pos): a prompt, decode steps, a chunk, a decode step


def assert_like(results, model, steps):
    for r, s in zip(results, steps):
        assert r["ok"], r["error"]
        for got, want in zip(r["outputs"], eager(model, *s["inputs"])):
            torch.testing.assert_close(got, want)


def test_the_exporter_writes_no_named_data_table_for_a_cache_that_starts_as_zeros(exported):
    from etrt.pte import read_pte

    assert "named_data" not in read_pte(exported("kv_owned").path)["program"]
    assert "named_data" in read_pte(exported("acc_owned").path)["program"]  # its initial value is named data


def test_two_loads_of_one_file_interleaved_each_run_like_eager(rt, exported):
    e = exported("kv_owned")
    before = rt.counters()["state_bytes"]
    first, second = load_method(e.path), load_method(e.path)
    assert rt.counters()["state_bytes"] == before + 2 * CACHE_BYTES
    first_model, second_model = e.eager(), e.eager()
    for i, (n, pos) in enumerate(STEPS):
        a, b = step(100 + i, n, pos), step(200 + i, n, pos)
        assert_like(run_py(rt, first, [a]), first_model, [a])
        assert_like(run_py(rt, second, [b]), second_model, [b])


def test_a_load_after_the_last_one_was_destroyed_starts_from_zeros(rt, exported):
    e = exported("kv_owned")
    before = rt.counters()["state_bytes"]
    for load in range(3):
        method = load_method(e.path)
        steps = [step(10 * load + i, n, pos) for i, (n, pos) in enumerate(STEPS)]
        assert_like(run_py(rt, method, steps), e.eager(), steps)
        del method
        gc.collect()
        assert rt.counters()["state_bytes"] == before, f"load {load}: the cache outlived its method"


@pytest.fixture(scope="module")
def prefill_decode(tmp_path_factory) -> Path:
    """KvCache exported with two methods, prefill (2..8 rows) and decode (one row), each lowering the cache into its
    delegate: two blobs naming one state, "cache"."""
    from executorch.exir import EdgeCompileConfig, to_edge
    from torch.export import export

    import etrt_export

    model = models.KvCache().eval()
    with torch.no_grad():
        programs = {
            "prefill": export(model, (torch.randn(1, 3, 4), torch.tensor([0])),
                              dynamic_shapes=({1: Dim("seq", min=2, max=8)}, None)),
            "decode": export(model, (torch.randn(1, 1, 4), torch.tensor([0]))),
        }
    edge = to_edge(programs, compile_config=EdgeCompileConfig(_check_ir_validity=False))
    edge = edge.to_backend(etrt_export.EtrtTestPartitioner(profiles=[[2, 4, 8]], own_mutable_buffers=True))
    path = tmp_path_factory.mktemp("prefill_decode") / "kv_prefill_decode.pte"
    path.write_bytes(edge.to_executorch().buffer)
    return path


def test_the_methods_of_one_loaded_program_share_the_cache_and_two_loads_do_not(rt, prefill_decode):
    from executorch.runtime import Runtime

    before = rt.counters()["state_bytes"]
    program = Runtime.get().load_program(str(prefill_decode))
    prefill, decode = program.load_method("prefill"), program.load_method("decode")
    assert rt.counters()["state_bytes"] == before + CACHE_BYTES  # one cache, shared by name
    other = Runtime.get().load_program(str(prefill_decode)).load_method("decode")
    assert rt.counters()["state_bytes"] == before + 2 * CACHE_BYTES
    one_sequence, other_sequence = models.KvCache().eval(), models.KvCache().eval()
    steps = [(prefill, one_sequence, step(1, 3, 0)), (decode, one_sequence, step(2, 1, 3)),
             (other, other_sequence, step(3, 1, 0)), (decode, one_sequence, step(4, 1, 4)),
             (prefill, one_sequence, step(5, 2, 5)), (other, other_sequence, step(6, 1, 1))]
    for method, model, s in steps:
        assert_like(run_py(rt, method, [s]), model, [s])


def test_the_committed_exported_fixture_is_what_the_exporter_writes_now(tmp_path):
    # tests/backend's C++ suite runs without torch, on this file as ExecuTorch 1.5.1's exporter writes it. A fresh
    # process: the test partitioner labels engines by how many it translated before.
    p = subprocess.run([sys.executable, str(HERE / "make_backend_fixtures.py"), str(tmp_path)], capture_output=True,
                       text=True, cwd=HERE)
    assert p.returncode == 0, p.stderr
    committed = HERE.parent / "backend" / "fixtures"
    assert sorted(f.name for f in tmp_path.iterdir()) == sorted(f.name for f in committed.glob("*.pte"))
    for fresh in tmp_path.iterdir():
        assert fresh.read_bytes() == (committed / fresh.name).read_bytes(), (
            f"{fresh.name} differs from what the exporter writes now: regenerate it with "
            "tests/export/make_backend_fixtures.py")
