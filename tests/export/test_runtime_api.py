"""etrt.runtime under ExecuTorch's Python runtime, on exported programs: what
importing it loads and checks, the guards' semantics (nesting, restoring,
per thread), reports, counters, the last error, and default load options for
delegates loaded from Python."""

from __future__ import annotations

import os
import threading
from importlib.metadata import version as dist_version

import pytest
import torch

from harness import load_method, profiles_of, run_cpp, run_py


def ids(n: int, seed: int = 0) -> torch.Tensor:
    return torch.randint(0, 16, (1, n), generator=torch.Generator().manual_seed(seed))


# ---------------------------------------------------------------------------
# Import


def test_import_loads_the_packaged_library_sharing_executorchs_runtime(rt):
    from executorch.runtime import Runtime

    import etrt
    from etrt import native

    package = os.path.dirname(os.path.abspath(etrt.__file__))
    assert rt.library_path() == os.path.join(package, "_native", "lib", "libetrt.so.0")
    et_lib = os.path.realpath(os.path.join(native.executorch_root(), "lib", "libexecutorch.so"))
    assert rt.executorch_library() == et_lib
    mapped = {os.path.realpath(line.split()[-1]) for line in open("/proc/self/maps")
              if os.path.basename(line.split()[-1]).startswith("libexecutorch.so")}
    assert mapped == {et_lib}
    assert "TensorRTBackend" in Runtime.get().backend_registry.registered_backend_names
    from etrt import _capi

    assert rt.abi_version() == _capi.ABI_VERSION and rt.version() == etrt.__version__
    info = native.build_info()
    assert info is not None and info.executorch_version == dist_version("executorch")
    assert native.read_elf_dynamic(rt.library_path()).runpath == ["$ORIGIN", "$ORIGIN/../../../executorch/lib"]
    # The tools' library, beside it, where etrt._reader finds it; it needs neither libetrt nor ExecuTorch.
    tools = native.tools_library_path()
    assert tools == os.path.join(package, "_native", "lib", "libetrt_tools.so.0")
    assert native.read_elf_dynamic(tools).runpath == ["$ORIGIN"]
    assert "libexecutorch.so" not in native.read_elf_dynamic(tools).needed
    assert _capi.load_tools(tools).abi_version == _capi.TOOLS_ABI_VERSION


def test_the_package_exports_the_runtime_names_lazily(rt):
    import etrt

    assert etrt.profile is rt.profile and etrt.automatic is rt.automatic and etrt.report is rt.report
    assert etrt.load_options is rt.load_options and etrt.ExecutionError is rt.ExecutionError


# ---------------------------------------------------------------------------
# Guards


def test_guards_nest_and_restore_like_the_cpp_guard(rt, exported):
    method = load_method(exported("projection").path)
    assert rt.current_request() == rt.ProfileRequest("default")
    with rt.profile(1), rt.report() as outer:
        assert rt.current_request() == rt.ProfileRequest("pinned", 1)
        method.execute([ids(5)])
        with rt.automatic(policy="first_fit"):
            assert rt.current_request() == rt.ProfileRequest("auto", policy="first_fit")
            method.execute([ids(5)])
            with rt.profile(1), rt.report() as inner:
                method.execute([ids(5)])
            assert rt.current_request().kind == "auto"
        assert rt.current_request() == rt.ProfileRequest("pinned", 1)
        method.execute([ids(5)])
    assert rt.current_request() == rt.ProfileRequest("default")
    assert outer.profiles == [1, 0, 1, 1] and inner.profiles == [1]
    assert [e.switched for e in outer.entries] == [True, True, True, False]
    assert outer.switches == 3 and outer.total == 4


def test_a_guard_left_by_an_exception_still_restores(rt, exported):
    method = load_method(exported("projection").path)
    with pytest.raises(RuntimeError):
        with rt.profile(0):
            method.execute([ids(20)])  # refused: outside profile 0
    assert rt.current_request().kind == "default"
    with pytest.raises(KeyError):
        with rt.automatic():
            raise KeyError("x")
    assert rt.current_request().kind == "default"


def test_guards_are_checked_like_the_cpp_guard(rt):
    with pytest.raises(TypeError):
        rt.profile(True)  # OptimizationProfileGuard(bool) does not compile either
    with pytest.raises(TypeError):
        rt.profile(1.0)
    with pytest.raises(ValueError):
        rt.profile(2**31)
    with pytest.raises(ValueError, match="'sticky_first_fit'"):
        rt.automatic(policy="lowest")
    assert rt.automatic("sticky").request == rt.automatic().request  # sticky first fit is the default
    assert rt.profile(-1).request.index == -1  # passed through; a delegate refuses it when it runs


def test_guards_are_per_thread(rt, exported):
    path = exported("projection").path
    barrier = threading.Barrier(2)
    seen = {}

    def worker(pin):
        method = load_method(path)  # a method is not reentrant: one per thread
        with rt.profile(pin), rt.report() as r:
            barrier.wait()
            for _ in range(5):
                method.execute([ids(5)])
            seen[pin] = (r.profiles, rt.current_request())

    threads = [threading.Thread(target=worker, args=(p,)) for p in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen[0] == ([0] * 5, rt.ProfileRequest("pinned", 0))
    assert seen[1] == ([1] * 5, rt.ProfileRequest("pinned", 1))
    assert rt.current_request().kind == "default"


def test_exiting_guards_out_of_order_is_refused_and_changes_nothing(rt):
    a, b = rt.profile(1), rt.profile(2)
    a.__enter__()
    b.__enter__()
    with pytest.raises(RuntimeError, match="reverse order"):
        a.__exit__(None, None, None)
    assert rt.current_request() == rt.ProfileRequest("pinned", 2)
    b.__exit__(None, None, None)
    a.__exit__(None, None, None)
    assert rt.current_request().kind == "default"
    done = {}
    a.__enter__()
    t = threading.Thread(target=lambda: done.update(error=pytest.raises(RuntimeError, a.__exit__, None, None, None)))
    t.start()
    t.join()
    assert "another thread" in str(done["error"].value)
    a.__exit__(None, None, None)
    assert rt.current_request().kind == "default"


# ---------------------------------------------------------------------------
# Reports, counters, errors


def test_reports_are_readable_after_their_block_and_count_beyond_capacity(rt, exported):
    method = load_method(exported("static").path)
    with rt.report() as r:
        for _ in range(rt.Report.capacity + 6):
            method.execute([torch.zeros(1, 4)])
        assert len(r.entries) == rt.Report.capacity
    assert r.total == rt.Report.capacity + 6 and len(r.entries) == rt.Report.capacity
    e = r.entries[0]
    assert e.delegate.startswith("forward#") and e.ok and e.num_profiles == 1
    with rt.report() as again:
        pass
    assert again.entries == [] and again.total == 0


def test_counters_count_executions_switches_and_the_last_profile(rt, exported):
    method = load_method(exported("sandwich").path)
    before = rt.counters()
    x, y = torch.randn(1, 20, 8), torch.randn(1, 20, 4)
    with rt.profile(1):
        method.execute([x, y])
    after = rt.counters()
    assert after["executions"] - before["executions"] == 2  # two delegates
    assert after["profile_switches"] - before["profile_switches"] == 2
    assert after["last_profile"] == 1


def test_counters_and_reports_count_the_bytes_etrt_copies(rt, exported):
    """A host engine copies nothing between host and device; every byte it copies is staging for TensorRT's
    256-byte alignment rule (ExecuTorch's tensors are 16-byte aligned) or a write-back, and each execution's record
    adds up to what the counters moved by."""
    method = load_method(exported("static").path)
    names = ("host_to_device_bytes", "device_to_host_bytes", "realigned_bytes", "write_back_bytes")
    before = rt.counters()
    assert set(names) <= set(before)
    with rt.report() as r:
        for _ in range(3):
            method.execute([torch.zeros(1, 4)])
    after = rt.counters()
    assert len(r.entries) == 3
    for name in names:
        assert after[name] - before[name] == sum(getattr(e, name) for e in r.entries), name
    assert after["host_to_device_bytes"] == before["host_to_device_bytes"]
    assert after["device_to_host_bytes"] == before["device_to_host_bytes"]
    assert all(e.host_to_device_bytes == 0 and e.device_to_host_bytes == 0 for e in r.entries)


def test_the_last_error_is_per_thread(rt, exported):
    path = exported("projection").path
    rt.clear_last_error()
    errors = {}

    def refuse():
        method = load_method(path)
        with rt.profile(0):
            try:
                method.execute([ids(20)])
            except RuntimeError:
                errors["thread"] = rt.last_error_message()

    t = threading.Thread(target=refuse)
    t.start()
    t.join()
    assert "outside [1, 8]" in errors["thread"]
    assert not rt.has_last_error() and rt.last_error_message() == ""


def test_execute_takes_a_program_too(rt, exported):
    from executorch.runtime import Runtime

    program = Runtime.get().load_program(str(exported("static").path))
    out = rt.execute(program, [torch.ones(1, 4)])
    assert out[0].shape == (1, 4)


# ---------------------------------------------------------------------------
# Default load options


@pytest.fixture
def clean_defaults(rt):
    rt.clear_default_load_options()
    yield
    rt.clear_default_load_options()


def _load_with(rt, path, **options):
    reads = rt._api.default_load_options_reads()
    with rt.load_options(**options):
        method = load_method(path)
    assert rt._api.default_load_options_reads() > reads, (
        "the load did not read the default load options (the hook in src/backend/glue/tensorrt_backend.cpp init)")
    return method


def _unguarded(rt, method, *seqs):
    out = []
    for n in seqs:
        with rt.report() as r:
            try:
                method.execute([ids(n)])
            except RuntimeError:
                out.append(None)
                continue
        out.append(r.profiles[0])
    return out


def test_default_load_options_apply_to_methods_loaded_while_they_are_set(rt, exported, clean_defaults):
    path = exported("projection").path
    off = _load_with(rt, path, auto_select_profiles=False)
    assert _unguarded(rt, off, 5, 20) == [0, None]  # profile 0 for everything, like a runner that knows nothing
    first_fit = _load_with(rt, path, auto_select_profiles=True, auto_policy="first_fit")
    assert _unguarded(rt, first_fit, 20, 5, 30) == [1, 0, 1]
    sticky = _load_with(rt, path, auto_select_profiles=True, auto_policy="sticky")
    assert _unguarded(rt, sticky, 20, 5, 30) == [1, 1, 1]
    # A guard still wins over the module's default.
    with rt.profile(0):
        assert sticky.execute([ids(5)])[0].shape == (1, 5, 4)
    # Methods keep the options they were loaded with; the block restored the defaults.
    assert rt.default_load_options() == {}
    assert _unguarded(rt, off, 20) == [None]


def test_the_same_options_from_python_defaults_and_cpp_load_options_agree(rt, exported, runner, tmp_path,
                                                                           clean_defaults):
    path = exported("projection").path
    options = {"auto_select_profiles": True, "auto_policy": "first_fit", "profile_strategy": "context_per_profile"}
    steps = [{"inputs": [ids(n, seed=n)]} for n in (20, 5, 30, 1)]
    py = run_py(rt, _load_with(rt, path, **options), steps)
    cpp = run_cpp(runner, path, steps, tmp_path, load_options=options)["steps"]
    assert [profiles_of(r) for r in py] == [profiles_of(r) for r in cpp] == [[1], [0], [1], [0]]
    for a, b in zip(py, cpp):
        torch.testing.assert_close(a["outputs"][0], b["outputs"][0], atol=0, rtol=0)


def test_bad_default_load_options_are_refused_and_change_nothing(rt, clean_defaults):
    rt.set_default_load_options(profile_strategy="switch")
    with pytest.raises(ValueError, match="'auto_policy' is 'lowest'"):
        rt.set_default_load_options(auto_select_profiles=True, auto_policy="lowest")
    with pytest.raises(ValueError, match="has no load option 'auto_select'"):
        rt.set_default_load_options(auto_select=True)
    with pytest.raises(ValueError, match="weight_streaming_budget"):
        rt.set_default_load_options(weight_streaming_budget="1.5")
    with pytest.raises(TypeError):
        rt.set_default_load_options(cuda_graphs=[True])
    assert rt.default_load_options() == {"profile_strategy": "switch"}
    rt.set_default_load_options(weight_streaming_budget=2**40, cuda_graphs=False)
    assert rt.default_load_options() == {"profile_strategy": "switch", "weight_streaming_budget": str(2**40),
                                         "cuda_graphs": False}
    rt.clear_default_load_options("cuda_graphs")
    assert "cuda_graphs" not in rt.default_load_options()


def test_host_engines_load_and_run_with_weight_streaming_and_graph_options(rt, exported, clean_defaults):
    # Host engines ignore a weight-streaming budget (no streamable weights) and CUDA graphs (device engines only).
    method = _load_with(rt, exported("projection").path, weight_streaming_budget=4096, cuda_graphs=True)
    with rt.automatic():
        assert method.execute([ids(7)])[0].shape == (1, 7, 4)
