"""ExecuTorch's profiling tools see etrt (docs/profiling.md): a two-profile program run prefill, decode, prefill
with ETDump enabled -- from C++ (the runner's Module with ETDumpGen) and from Python (ExecuTorch's runtime with
``enable_etdump``) -- and the dump read with ExecuTorch's own ``Inspector`` and the program's ETRecord: etrt's
events are there, attributed to the delegate call, with the profile each execution ran on and whether it switched.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List

import pytest

import harness
import models

# The decode_prefill case: profile 0 takes one token, profile 1 two to 64.
PREFILL, DECODE = 1, 0
LENGTHS = [16, 1, 16]  # prefill, decode, prefill: each changes profile (the engine starts on profile 0)
PROFILES = [PREFILL, DECODE, PREFILL]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """The decode_prefill case exported with its ETRecord."""
    out = tmp_path_factory.mktemp("profiling")
    etrecord = out / "decode_prefill.etrecord"
    exported = harness.export_case(models.CASES["decode_prefill"], out, etrecord=etrecord)
    return exported, etrecord


def _inputs(n: int):
    import torch

    return [torch.randint(0, 16, (1, n), generator=torch.Generator().manual_seed(n))]


def _etrt_events(etdump: Path, etrecord: Path) -> List[Dict[str, Any]]:
    from executorch.devtools import Inspector

    from etrt.profiling import etrt_events, parse_metadata

    inspector = Inspector(etdump_path=str(etdump), etrecord=str(etrecord), delegate_metadata_parser=parse_metadata)
    events = etrt_events(inspector)
    assert events, "no etrt events in the dump"
    return sorted(events, key=lambda e: e["start"])


def _check(events: List[Dict[str, Any]]) -> None:
    from etrt.profiling import EVENT_NAMES

    assert {e["name"] for e in events} <= set(EVENT_NAMES)
    choices = [e for e in events if e["name"] == "etrt profile choice"]
    assert [c["metadata"]["profile"] for c in choices] == PROFILES
    assert [c["metadata"]["switched"] for c in choices] == [True, True, True]
    assert [c["metadata"]["pin_ignored"] for c in choices] == [False, False, False]
    assert all(c["metadata"]["ok"] and c["metadata"]["num_profiles"] == 2 for c in choices)
    switches = [e["metadata"] for e in events if e["name"] == "etrt profile switch"]
    assert [(s["from"], s["to"]) for s in switches] == [(DECODE, PREFILL), (PREFILL, DECODE), (DECODE, PREFILL)]
    # Each execution logs its steps in order, each after the one before.
    per_execution = {name: [e for e in events if e["name"] == name] for name in EVENT_NAMES[:6]}
    for name, logged in per_execution.items():
        assert len(logged) == 3, f"{name}: {logged}"
    for i in range(3):
        starts = [per_execution[name][i]["start"] for name in EVENT_NAMES[:6]]
        assert starts == sorted(starts), f"execution {i}: {starts}"
    # The ETRecord's delegate map attributes every event to the delegate call and the partition's nodes.
    for e in events:
        assert e["backend"] == "TensorRTBackend", e
        assert e["debug_handles"], e
        assert e["duration"] >= 0, e


def test_a_cpp_module_with_etdumpgen_shows_profile_and_switch_per_execution(recorded, runner, tmp_path):
    exported, etrecord = recorded
    etdump = tmp_path / "cpp.etdp"
    steps = [{"inputs": _inputs(n)} for n in LENGTHS]
    results = harness.run_cpp(runner, exported.path, steps, tmp_path, etdump=etdump)
    assert [s["ok"] for s in results["steps"]] == [True, True, True], results
    assert [s["report"][0]["profile"] for s in results["steps"]] == PROFILES
    _check(_etrt_events(etdump, etrecord))


def test_pythons_runtime_with_etdump_shows_profile_and_switch_per_execution(rt, recorded, tmp_path):
    import torch
    from executorch.runtime import Runtime

    exported, etrecord = recorded
    program = Runtime.get().load_program(str(exported.path), enable_etdump=True)
    method = program.load_method("forward")
    eager = exported.eager()
    for n in LENGTHS:
        inputs = _inputs(n)
        torch.testing.assert_close(method.execute(inputs)[0], eager(*inputs))
    etdump, debug = tmp_path / "py.etdp", tmp_path / "py.bin"
    program.write_etdump_result_to_file(str(etdump), str(debug))
    _check(_etrt_events(etdump, etrecord))


def test_the_event_names_the_delegate_logs_are_the_ones_the_exporter_maps(recorded):
    from etrt.profiling import EVENT_NAMES

    exported, _ = recorded
    lowered = [m for _, m in exported.edge.exported_program().graph_module.named_modules()
               if type(m).__name__ == "LoweredBackendModule"]
    assert len(lowered) == 1
    mapping = lowered[0].meta["debug_handle_map"]
    assert set(mapping) == set(EVENT_NAMES)
    assert all(handles for handles in mapping.values())
