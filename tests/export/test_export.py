"""Real exports: torch.export with a dynamic sequence length -> to_edge ->
to_backend (the test partitioner, backend id "TensorRTBackend", GPU-free
engines in TR01/TR02 blobs) -> to_executorch, then the same .pte files run
through ExecuTorch's Python runtime (with etrt.runtime) and through C++ Module
(tests/export/runner), compared with eager PyTorch, and read by
``python -m etrt inspect | validate``."""

from __future__ import annotations

import json

import pytest
import torch

import harness
from harness import load_method, profiles_of, run_cpp, run_py

ATOL = 1e-5


def assert_close(actual, expected):
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected):
        assert a.shape == e.shape, (a.shape, e.shape)
        torch.testing.assert_close(a, e, atol=ATOL, rtol=1e-5)


def eager(model, *inputs):
    with torch.no_grad():
        out = model(*inputs)
    return list(out) if isinstance(out, tuple) else [out]


def ids(n: int, seed: int = 0) -> torch.Tensor:
    return torch.randint(0, 16, (1, n), generator=torch.Generator().manual_seed(seed))


# ---------------------------------------------------------------------------
# Static, one profile


def test_static_one_profile_runs_from_python_and_cpp_like_eager(rt, exported, runner, tmp_path):
    e = exported("static")
    x = torch.randn(1, 4)
    want = eager(e.eager(), x)
    steps = [{"inputs": [x]}, {"inputs": [x], "request": {"pin": 1}}, {"inputs": [x], "request": {"auto": "first_fit"}}]
    py = run_py(rt, load_method(e.path), steps)
    cpp = run_cpp(runner, e.path, steps, tmp_path)["steps"]
    for results in (py, cpp):
        for r in results:
            assert r["ok"], r["error"]
            assert_close(r["outputs"], want)
            assert [(x["profile"], x["num_profiles"]) for x in r["report"]] == [(0, 1)]
    assert py[1]["report"][0]["pin_ignored"]  # a static one-profile engine ignores a pin


# ---------------------------------------------------------------------------
# Dynamic, two profiles: pins and automatic selection


def test_pins_choose_the_profile_and_a_pin_that_does_not_fit_is_refused(rt, exported, runner, tmp_path):
    e = exported("projection")
    model = e.eager()
    short, long = ids(5), ids(20, seed=1)
    steps = [{"inputs": [short], "request": {"pin": 0}},
             {"inputs": [short], "request": {"pin": 1}},
             {"inputs": [long], "request": {"pin": 1}},
             {"inputs": [long], "request": {"pin": 0}},   # seq 20 is outside profile 0 (1..8)
             {"inputs": [short], "request": {"pin": 2}}]  # no profile 2
    py = run_py(rt, load_method(e.path), steps)
    cpp = run_cpp(runner, e.path, steps, tmp_path)["steps"]
    for results in (py, cpp):
        assert [r["ok"] for r in results] == [True, True, True, False, False]
        assert [profiles_of(r) for r in results[:3]] == [[0], [1], [1]]
        assert_close(results[0]["outputs"], eager(model, short))
        assert_close(results[1]["outputs"], eager(model, short))
        assert_close(results[2]["outputs"], eager(model, long))
        assert "dimension 1 is 20, outside [1, 8] in optimization profile 0" in results[3]["error"]
        assert "optimization profile 2 was pinned" in results[4]["error"], results[4]["error"]
        assert "this engine has 2 optimization profiles" in results[4]["error"]
    # The same switches in both.
    assert [[x["switched"] for x in r["report"]] for r in py[:3]] == \
        [[x["switched"] for x in r["report"]] for r in cpp[:3]]


@pytest.mark.parametrize("policy, expected", [("sticky_first_fit", [1, 1, 1]), ("first_fit", [1, 0, 1])])
def test_automatic_policies_differ_where_profiles_overlap(rt, exported, runner, tmp_path, policy, expected):
    e = exported("projection")
    model = e.eager()
    seqs = [20, 5, 30]  # 20: only profile 1 fits; 5: both fit (sticky keeps 1, first fit takes 0)
    steps = [{"inputs": [ids(n, seed=n)], "request": {"auto": policy}} for n in seqs]
    py = run_py(rt, load_method(e.path), steps)
    cpp = run_cpp(runner, e.path, steps, tmp_path)["steps"]
    for results in (py, cpp):
        assert [profiles_of(r) for r in results] == [[p] for p in expected]
        for r, n in zip(results, seqs):
            assert r["ok"] and r["report"][0]["num_profiles"] == 2
            assert_close(r["outputs"], eager(model, ids(n, seed=n)))


def test_the_execution_error_carries_the_delegates_message(rt, exported):
    method = load_method(exported("projection").path)
    with rt.profile(0):
        with pytest.raises(rt.ExecutionError) as info:
            rt.execute(method, [ids(20)])
    assert "outside [1, 8] in optimization profile 0" in info.value.etrt_message
    assert "outside [1, 8]" in str(info.value) and isinstance(info.value.__cause__, RuntimeError)
    assert rt.has_last_error() and rt.last_error_message() == info.value.etrt_message
    # A refusal ExecuTorch makes before any delegate runs is ExecuTorch's own error.
    rt.clear_last_error()
    with pytest.raises(RuntimeError) as info:
        rt.execute(method, [ids(5).to(torch.int32)])
    assert not isinstance(info.value, rt.ExecutionError) and not rt.has_last_error()
    # The delegate stays usable.
    with rt.profile(1):
        assert rt.execute(method, [ids(20)])[0].shape == (1, 20, 4)


# ---------------------------------------------------------------------------
# ExecuTorch ops before, between and after two delegates


def test_ops_before_between_and_after_two_delegates(rt, exported, runner, tmp_path):
    e = exported("sandwich")
    calls = [n for n in e.edge.exported_program().graph.nodes
             if n.op == "call_function" and "executorch_call_delegate" in str(n.target)]
    assert len(calls) == 2
    # The second delegate's matmul needs the sequence length: ExecuTorch passes it as a SymInt argument.
    assert any(not isinstance(a.meta.get("val"), torch.Tensor) for a in calls[1].args[1:])
    model = e.eager()
    steps = []
    for n, request in [(1, {"pin": 0}), (17, {"pin": 1}), (64, {"auto": "first_fit"}), (1, {"auto": "first_fit"}),
                       (3, {"pin": 0})]:
        g = torch.Generator().manual_seed(n)
        steps.append({"inputs": [torch.randn(1, n, 8, generator=g), torch.randn(1, n, 4, generator=g)],
                      "request": request})
    py = run_py(rt, load_method(e.path), steps)
    cpp = run_cpp(runner, e.path, steps, tmp_path)["steps"]
    for results in (py, cpp):
        assert [r["ok"] for r in results] == [True, True, True, True, False]
        # Both delegates apply the thread's request, each to its own engine.
        assert [profiles_of(r) for r in results[:4]] == [[0, 0], [1, 1], [1, 1], [0, 0]]
        for r, s in zip(results[:4], steps):
            assert_close(r["outputs"], eager(model, *s["inputs"]))
        assert "forward#" in results[4]["error"] and "outside [1, 1] in optimization profile 0" in results[4]["error"]


# ---------------------------------------------------------------------------
# Mutable buffers


def _check_accumulator_runs(rt, e, runner, tmp_path):
    """Three steps of an exported accumulator (a buffer the model adds its input to) from Python and C++, each
    against the eager module, whose buffer accumulates too."""
    xs = [torch.randn(1, 4, generator=torch.Generator().manual_seed(i)) for i in range(3)]
    model = e.eager()
    want = [eager(model, x) for x in xs]
    steps = [{"inputs": [x]} for x in xs]
    py = run_py(rt, load_method(e.path), steps)
    cpp = run_cpp(runner, e.path, steps, tmp_path)["steps"]
    for results in (py, cpp):
        for r, w in zip(results, want):
            assert r["ok"], r["error"]
            assert_close(r["outputs"], w)


def test_a_mutable_buffer_around_the_delegate_keeps_its_state(rt, exported, runner, tmp_path):
    e = exported("buffer_around")
    _check_accumulator_runs(rt, e, runner, tmp_path)


def _kv_steps():
    steps = []
    for n, pos, request in [(3, 0, {"auto": "first_fit"}), (1, 3, {"pin": 0}), (4, 4, {"pin": 1}), (1, 8, None)]:
        x = torch.randn(1, n, 4, generator=torch.Generator().manual_seed(n + pos))
        steps.append({"inputs": [x, torch.tensor([pos])], "request": request})
    return steps


def _check_kv_runs(rt, e, runner, tmp_path):
    model = e.eager()
    steps = _kv_steps()
    want = [eager(model, *s["inputs"]) for s in steps]
    py = run_py(rt, load_method(e.path), steps)
    cpp = run_cpp(runner, e.path, steps, tmp_path)["steps"]
    for results in (py, cpp):
        for r, w in zip(results, want):
            assert r["ok"], r["error"]
            assert_close(r["outputs"], w)
        assert [profiles_of(r)[0] for r in results[:3]] == [1, 0, 1]
    # The cache holds every update, in order (rows 0..8 written, the rest still zero).
    cache = py[-1]["outputs"][-2]
    assert torch.count_nonzero(cache[0, :9]).item() == 9 * 4 and torch.count_nonzero(cache[0, 9:]).item() == 0


def test_a_mutable_buffer_updated_in_place_by_the_delegate(rt, exported, runner, tmp_path):
    e = exported("kv_around")
    report = json.loads(harness.etrt_cli("inspect", "--json", e.path).stdout)
    delegate = report["methods"][0]["delegates"][0]
    assert delegate["blob"]["magic"] == "TR02"
    [alias] = delegate["aliases"]
    assert alias["kind"] == "kv_cache_update" and alias["status"] == "ok"
    # ExecuTorch passes the buffer in and a tensor for its new value (the delegate writes the buffer in place and
    # copies into that tensor; ExecuTorch then copies it back into the buffer).
    aliased = next(b for b in delegate["io_bindings"] if b["name"] == alias["output"])
    assert aliased["bound_to"] is not None
    _check_kv_runs(rt, e, runner, tmp_path)


def test_a_mutable_buffer_the_delegate_owns_runs_like_eager(rt, exported, runner, tmp_path):
    # ExecuTorch 1.5.1 lowers a buffer the delegate owns (tag_mutated_buffer) into the delegate entirely: the call
    # passes neither the buffer nor its new value. The blob's delegate_state names the engine's cache input and output,
    # and the delegate keeps the cache in storage of its own, across calls.
    e = exported("kv_owned")
    report = json.loads(harness.etrt_cli("inspect", "--json", e.path).stdout)
    delegate = report["methods"][0]["delegates"][0]
    [state] = delegate["delegate_state"]
    assert state["name"] == "cache" and state["in_place"] and state["bytes"] == 16 * 4 * 4
    assert state["initial_value"] == ""  # zeros: no named data needed
    p = harness.etrt_cli("validate", e.path)
    assert p.returncode == 0 and "OK" in p.stdout, p.stdout
    _check_kv_runs(rt, e, runner, tmp_path)


def test_a_delegate_owned_cache_matches_the_program_owned_one_step_by_step_and_starts_again_after_a_reset(rt, exported):
    owned, around = load_method(exported("kv_owned").path), load_method(exported("kv_around").path)
    before = rt.counters()["state_bytes"]
    steps = _kv_steps()
    first = run_py(rt, owned, steps)
    assert rt.counters()["state_bytes"] >= 16 * 4 * 4
    assert before >= 16 * 4 * 4  # loading the method allocated it already
    program_owned = run_py(rt, around, steps)
    for a, b in zip(first, program_owned):
        assert a["ok"] and b["ok"], (a["error"], b["error"])
        assert_close(a["outputs"], b["outputs"])
    # Without a reset the cache keeps the first run's rows: the same steps give other outputs.
    again = run_py(rt, owned, steps[:1])
    assert not torch.equal(again[0]["outputs"][0], first[0]["outputs"][0])
    assert rt.reset_state("cache") >= 1
    fresh = exported("kv_owned").eager()
    for r, s in zip(run_py(rt, owned, steps), steps):
        assert r["ok"], r["error"]
        assert_close(r["outputs"], eager(fresh, *s["inputs"]))
    assert rt.reset_state("no such state") == 0


def test_a_state_written_back_starts_from_its_exported_value(rt, exported, runner, tmp_path):
    # An accumulator whose new value is an engine output of its own (not in place): the delegate copies it into the
    # state after each call. Its initial value is not zeros, so it travels as named data.
    e = exported("acc_owned")
    [state] = json.loads(harness.etrt_cli("inspect", "--json", e.path).stdout)["methods"][0]["delegates"][0][
        "delegate_state"]
    assert state["name"] == "acc" and not state["in_place"] and state["initial_value"] == "etrt_state/acc"
    _check_accumulator_runs(rt, e, runner, tmp_path)


def _attention_steps():
    # A prompt (prefill profile), decode steps, a second prompt chunk continuing the sequence, a decode step.
    return [{"inputs": [ids(n, seed=n + pos), torch.tensor([pos])]} for n, pos in [(5, 0), (1, 5), (1, 6), (3, 7),
                                                                                     (1, 10)]]


def test_an_attention_decoder_runs_like_eager_with_its_caches_kept_by_the_program_or_by_the_delegate(rt, exported):
    # Causal attention over caches updated in place (the model bench/gpu/decoder_state_export.py exports with 30
    # layers): every step attends over rows earlier steps wrote, so the caches' contents decide the logits.
    steps = _attention_steps()
    model = exported("attention_around").eager()
    want = [eager(model, *s["inputs"]) for s in steps]
    around = run_py(rt, load_method(exported("attention_around").path), steps)
    owned_method = load_method(exported("attention_owned").path)
    owned = run_py(rt, owned_method, steps)
    for a, o, w in zip(around, owned, want):
        assert a["ok"] and o["ok"], (a["error"], o["error"])
        assert_close(a["outputs"], w)
        assert_close(o["outputs"], w)
        assert torch.equal(a["outputs"][0], o["outputs"][0])  # the same engine on the same inputs
    # After a reset the last step alone attends over zero rows where the sequence had written its own.
    assert rt.reset_state() >= 4
    [alone] = run_py(rt, owned_method, steps[-1:])
    assert alone["ok"] and not torch.allclose(alone["outputs"][0], want[-1][0], atol=1e-3)
    assert rt.reset_state() >= 4
    for r, w in zip(run_py(rt, owned_method, steps), want):
        assert r["ok"], r["error"]
        assert_close(r["outputs"], w)


# ---------------------------------------------------------------------------
# A program whose exported bound is smaller than the engine's profile


def test_an_exported_bound_below_the_engines_profile_fails_validation(rt, exported):
    e = exported("bound_too_small")
    p = harness.etrt_cli("validate", "--json", e.path)
    assert p.returncode == 1, p.stdout + p.stderr
    verdict = json.loads(p.stdout)
    codes = [f["code"] for f in verdict["errors"]]
    assert "exceeds-planned-bounds" in codes, verdict
    message = next(f["message"] for f in verdict["errors"] if f["code"] == "exceeds-planned-bounds")
    assert "64" in message and "32" in message
    # Shapes inside the exported bound still run.
    with rt.profile(1):
        out = load_method(e.path).execute([ids(20)])
    assert out[0].shape == (1, 20, 4)


# ---------------------------------------------------------------------------
# The same files through etrt inspect / validate


@pytest.mark.parametrize("name", ["static", "projection", "sandwich", "buffer_around", "kv_around", "kv_owned",
                                  "acc_owned"])
def test_etrt_inspect_and_validate_read_the_exported_files(exported, name):
    e = exported(name)
    p = harness.etrt_cli("validate", e.path)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "OK" in p.stdout
    p = harness.etrt_cli("inspect", "--json", e.path)
    assert p.returncode == 0, p.stderr
    report = json.loads(p.stdout)
    delegates = [d for m in report["methods"] for d in m["delegates"] if d["backend_id"] == "TensorRTBackend"]
    assert len(delegates) == e.case.delegates
    for d in delegates:
        assert d["engine"]["kind"] == "gpufree"
        assert d["profiles"]["count"] == max(1, len(e.case.profiles))
    assert report["validation"]["ok"]
    text = harness.etrt_cli("inspect", e.path)
    assert text.returncode == 0 and "TensorRTBackend" in text.stdout


def test_validate_program_takes_executorchs_own_objects(exported):
    """etrt.validate.validate_program on the real ExecutorchProgramManager and EdgeProgramManager (its duck-typed
    paths), with the same verdict as on the .pte."""
    from etrt.validate import validate_program

    good, bad = exported("sandwich"), exported("bound_too_small")
    assert validate_program(good.manager).ok and validate_program(good.path).ok
    edge = validate_program(good.edge)
    assert edge.ok and len([d for d in edge.delegates if d.is_tensorrt]) == 2
    assert "planned-bounds-unchecked" in [f.code for f in edge.infos]
    assert "exceeds-planned-bounds" in [f.code for f in validate_program(bad.manager).errors]
    # Before serialization there is no memory plan: only the .pte (or the manager) shows the bound problem.
    assert validate_program(bad.edge).ok
