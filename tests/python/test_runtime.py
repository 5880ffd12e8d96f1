"""The Python runtime's own layers, without ExecuTorch's Python runtime (which
needs torch; tests/export runs etrt.runtime under it, in .venv-export):

* libetrt's C ABI (include/etrt/c_api.h) through etrt._capi, on the library
  the CMake build made (build/src/backend/libetrt.so, or $ETRT_TEST_LIBRARY):
  the guards' nesting and per-thread state, reports, counters, errors and the
  process-wide default load options;
* etrt.native's ELF reader;
* etrt.engine_builder, byte for byte against engines the C++ builder wrote.
"""

import ctypes
import os
import re
import struct
import subprocess
import sys
import threading
from pathlib import Path

import pytest

import _builders as B
from etrt import _capi, native
from etrt.engine_builder import EngineBuildError, EngineBuilder
from etrt.gpufree import read_gpufree_engine

ROOT = Path(__file__).resolve().parents[2]


def _library() -> Path:
    path = Path(os.environ.get("ETRT_TEST_LIBRARY", ROOT / "build" / "src" / "backend" / "libetrt.so"))
    if not path.exists():
        pytest.skip(f"{path} is not built (cmake --build build); set ETRT_TEST_LIBRARY to test another")
    return path


@pytest.fixture(scope="module")
def api() -> _capi.CApi:
    return _capi.load(str(_library()))


# --------------------------------------------------------------------------
# The C ABI


def test_the_library_speaks_abi_version_6_and_reports_its_version(api):
    assert api.abi_version == _capi.ABI_VERSION == 6
    assert api.version().decode() == "0.1.0"
    header = (ROOT / "include" / "etrt" / "c_api.h").read_text()
    assert "#define ETRT_ABI_VERSION 6" in header


def test_the_tools_library_lies_beside_libetrt_speaks_its_own_abi_and_needs_neither_libetrt_nor_executorch():
    tools = _library().parent / native.TOOLS_LIBRARY_NAME
    assert tools.is_file(), f"the build puts libetrt_tools beside libetrt ({tools})"
    api = _capi.load_tools(str(tools))
    assert api.abi_version == _capi.TOOLS_ABI_VERSION == 1
    header = (ROOT / "include" / "etrt" / "tools_c_api.h").read_text()
    assert "#define ETRT_TOOLS_ABI_VERSION 1" in header
    needed = native.read_elf_dynamic(str(tools)).needed
    assert "libetrt.so.0" not in needed and "libexecutorch.so" not in needed
    # libetrt carries none of the tools' C ABI: each of its functions is libetrt_tools' alone.
    runtime = ctypes.CDLL(str(_library()))
    for name in _capi._TOOLS_SIGNATURES:
        assert hasattr(api.lib, name)
        assert not hasattr(runtime, name), f"libetrt exports {name}, a tools' function"


def test_the_tools_find_their_library_beside_the_libetrt_they_would_load(monkeypatch, tmp_path):
    monkeypatch.setenv("ETRT_LIBRARY", str(tmp_path / native.LIBRARY_NAME))
    assert native.tools_library_path() is None, "no libetrt_tools beside it"
    (tmp_path / native.TOOLS_LIBRARY_NAME).write_bytes(b"")
    assert native.tools_library_path() == str(tmp_path / native.TOOLS_LIBRARY_NAME)


def test_the_library_loads_with_dlopen_after_other_libraries_use_static_tls(api):
    # ctypes loaded it above: a library that is dlopen()ed must fit glibc's static TLS reserve.
    dyn = native.read_elf_dynamic(str(_library()))
    assert "libexecutorch.so" in dyn.needed


def _push_pin(api, index):
    depth = ctypes.c_uint32()
    assert api.profile_push_pinned(index, ctypes.byref(depth)) == _capi.OK
    return depth.value


def _push_auto(api, policy):
    depth = ctypes.c_uint32()
    rc = api.profile_push_auto(policy, ctypes.byref(depth))
    return rc, depth.value


def test_pushes_nest_and_pops_restore_like_the_cpp_guard(api):
    assert api.current() == (_capi.REQUEST_DEFAULT, 0, _capi.POLICY_STICKY_FIRST_FIT)
    d1 = _push_pin(api, 1)
    assert api.current()[:2] == (_capi.REQUEST_PINNED, 1)
    rc, d2 = _push_auto(api, _capi.POLICY_FIRST_FIT)
    assert rc == _capi.OK and d2 == d1 + 1 == api.profile_depth()
    assert api.current() == (_capi.REQUEST_AUTO, 0, _capi.POLICY_FIRST_FIT)
    d3 = _push_pin(api, 3)
    assert api.current()[:2] == (_capi.REQUEST_PINNED, 3)
    assert api.profile_pop(d3) == _capi.OK
    assert api.current() == (_capi.REQUEST_AUTO, 0, _capi.POLICY_FIRST_FIT)
    assert api.profile_pop(d2) == _capi.OK
    assert api.current()[:2] == (_capi.REQUEST_PINNED, 1)
    assert api.profile_pop(d1) == _capi.OK
    assert api.current()[0] == _capi.REQUEST_DEFAULT and api.profile_depth() == 0


def test_an_out_of_order_pop_is_refused_and_changes_nothing(api):
    d1 = _push_pin(api, 1)
    d2 = _push_pin(api, 2)
    assert api.profile_pop(d1) == _capi.E_OUT_OF_ORDER
    assert api.current()[:2] == (_capi.REQUEST_PINNED, 2)
    assert api.profile_pop(d2) == _capi.OK and api.profile_pop(d1) == _capi.OK
    assert api.profile_pop(d1) == _capi.E_OUT_OF_ORDER  # nothing left
    assert api.profile_pop(0) == _capi.E_OUT_OF_ORDER


def test_bad_policies_and_null_outputs_are_refused(api):
    rc, _ = _push_auto(api, 7)
    assert rc == _capi.E_INVALID_ARGUMENT
    assert api.profile_push_pinned(1, None) == _capi.E_INVALID_ARGUMENT
    assert api.profile_depth() == 0


def test_requests_belong_to_the_thread_that_pushed_them(api):
    d = _push_pin(api, 1)
    seen = {}

    def other():
        seen["request"] = api.current()
        seen["pop"] = api.profile_pop(d)  # not this thread's guard
        depth = _push_pin(api, 4)
        seen["own"] = api.current()[:2]
        seen["own_pop"] = api.profile_pop(depth)

    t = threading.Thread(target=other)
    t.start()
    t.join()
    assert seen == {"request": (_capi.REQUEST_DEFAULT, 0, 0), "pop": _capi.E_OUT_OF_ORDER,
                    "own": (_capi.REQUEST_PINNED, 4), "own_pop": _capi.OK}
    assert api.current()[:2] == (_capi.REQUEST_PINNED, 1)
    assert api.profile_pop(d) == _capi.OK


def test_a_thread_may_end_with_requests_and_reports_alive(api):
    def leaky():
        _push_pin(api, 2)
        handle = ctypes.c_void_p()
        assert api.report_create(ctypes.byref(handle)) == _capi.OK

    t = threading.Thread(target=leaky)
    t.start()
    t.join()
    assert api.current()[0] == _capi.REQUEST_DEFAULT


def test_reports_nest_are_per_thread_and_end_innermost_first(api):
    outer, inner = ctypes.c_void_p(), ctypes.c_void_p()
    assert api.report_create(ctypes.byref(outer)) == _capi.OK
    assert api.report_create(ctypes.byref(inner)) == _capi.OK
    kept, total, switches = ctypes.c_uint64(), ctypes.c_uint64(), ctypes.c_uint64()
    assert api.report_counts(inner, ctypes.byref(kept), ctypes.byref(total), ctypes.byref(switches)) == _capi.OK
    assert (kept.value, total.value, switches.value) == (0, 0, 0)
    record = _capi.ExecutionRecordStruct()
    assert api.report_entry(inner, 0, ctypes.byref(record), ctypes.sizeof(record)) == _capi.E_INVALID_ARGUMENT
    assert api.report_destroy(outer) == _capi.E_OUT_OF_ORDER
    result = {}
    t = threading.Thread(target=lambda: result.update(rc=api.report_counts(inner, None, None, None)))
    t.start()
    t.join()
    assert result["rc"] == _capi.E_BAD_HANDLE  # another thread's report
    assert api.report_clear(inner) == _capi.OK
    assert api.report_destroy(inner) == _capi.OK
    assert api.report_destroy(inner) == _capi.E_BAD_HANDLE
    assert api.report_destroy(outer) == _capi.OK
    assert api.report_capacity() == 64
    # The name, profile, profile count and four flag bytes (76 bytes, the first layout), then the four byte counts
    # appended at the next 8-byte boundary: a caller of the first layout passes 76 and gets what it knows.
    assert _capi.ExecutionRecordStruct.reserved.offset + 1 == 64 + 4 + 4 + 4
    assert _capi.ExecutionRecordStruct.host_to_device_bytes.offset == 80
    assert ctypes.sizeof(_capi.ExecutionRecordStruct) == 80 + 4 * 8


def test_counters_and_the_last_error_without_executions(api):
    value = ctypes.c_int64()
    for name in _capi.COUNTERS:
        assert api.counter(name.encode(), ctypes.byref(value)) == _capi.OK, name
    for name in (b"host_to_device_bytes", b"device_to_host_bytes", b"realigned_bytes", b"write_back_bytes"):
        assert api.counter(name, ctypes.byref(value)) == _capi.OK and value.value == 0, name
    assert api.counter(b"last_profile", ctypes.byref(value)) == _capi.OK and value.value == -1
    assert api.counter(b"scratch_bytes", ctypes.byref(value)) == _capi.OK and value.value == 0  # no delegate lives
    assert api.counter(b"nope", ctypes.byref(value)) == _capi.E_INVALID_ARGUMENT
    api.clear_last_error()
    assert api.has_last_error() == 0 and api.last_error() == ""


def test_the_counter_names_are_the_ones_the_headers_declare():
    # include/etrt/options.h (kCounter*, in order) declares them; etrt_counter's comment in c_api.h lists them.
    options = (ROOT / "include" / "etrt" / "options.h").read_text()
    assert tuple(re.findall(r'inline constexpr char kCounter\w+\[\] = "([^"]+)";', options)) == _capi.COUNTERS
    header = (ROOT / "include" / "etrt" / "c_api.h").read_text()
    comment = header[header.rindex("/**", 0, header.index("int etrt_counter(")):header.index("int etrt_counter(")]
    assert tuple(re.findall(r'"([a-z_]+)"', comment)) == _capi.COUNTERS


def _set(api, key, value):
    error = ctypes.create_string_buffer(512)
    if isinstance(value, bool):
        rc = api.set_default_load_option_bool(key.encode(), int(value), error, len(error))
    elif isinstance(value, int):
        rc = api.set_default_load_option_int(key.encode(), value, error, len(error))
    else:
        rc = api.set_default_load_option_string(key.encode(), value.encode(), error, len(error))
    return rc, error.value.decode()


def test_default_load_options_are_checked_like_load_options_and_listed_in_order(api):
    api.clear_default_load_options(None)
    assert api.defaults_text() == ""
    assert _set(api, "profile_strategy", "context_per_profile") == (_capi.OK, "")
    assert _set(api, "auto_select_profiles", True) == (_capi.OK, "")
    assert _set(api, "weight_streaming_budget", 4096) == (_capi.OK, "")
    assert _set(api, "auto_policy", "first_fit") == (_capi.OK, "")
    assert _set(api, "auto_select_profiles", False) == (_capi.OK, "")  # replaces, keeps its place
    assert api.defaults_text() == ("profile_strategy\tstring\tcontext_per_profile\nauto_select_profiles\tbool\t0\n"
                                   "weight_streaming_budget\tint\t4096\nauto_policy\tstring\tfirst_fit\n")
    refusals = [
        (("auto_policy", "sticky"), "'auto_policy' is 'sticky'; use 'sticky_first_fit' or 'first_fit'"),
        (("auto_select_profiles", "yes"), "'auto_select_profiles' must be a bool, got a string"),
        (("shared_scratch", 1), "'shared_scratch' must be a bool, got a int"),
        (("weight_streaming_budget", "12abc"), "non-negative int or a string of decimal digits"),
        (("weight_streaming_budget", -1), "non-negative int"),
        (("bogus", True), "has no load option 'bogus'; known options: auto_select_profiles"),
        (("", True), "needs a key"),
    ]
    for (key, value), message in refusals:
        rc, error = _set(api, key, value)
        assert rc == _capi.E_INVALID_ARGUMENT and message in error, (key, value, error)
    # Refusals changed nothing.
    assert api.defaults_text().count("\n") == 4
    error = ctypes.create_string_buffer(8)
    assert api.set_default_load_option_string(b"auto_policy", None, error, len(error)) == _capi.E_INVALID_ARGUMENT
    assert error.value == b"load op"  # cut to fit, NUL-terminated
    api.clear_default_load_options(b"auto_policy")
    assert "auto_policy" not in api.defaults_text()
    small = ctypes.create_string_buffer(10)
    assert api.default_load_options(small, len(small)) == len(api.defaults_text()) and len(small.value) == 9
    api.clear_default_load_options(None)
    assert api.defaults_text() == ""


def test_the_backend_hook_reads_defaults_is_counted(api):
    # No delegate loads here (that needs a program; tests/export loads them): the count starts where it is.
    assert api.default_load_options_reads() >= 0


# --------------------------------------------------------------------------
# etrt.native


def test_the_elf_reader_agrees_with_readelf():
    lib = str(_library())
    dyn = native.read_elf_dynamic(lib)
    assert dyn.soname == "libetrt.so.0"
    assert {"libexecutorch.so", "libetrt_gpufree_nvinfer.so.0"} <= set(dyn.needed)
    readelf = subprocess.run(["readelf", "-d", lib], capture_output=True, text=True)
    if readelf.returncode == 0:
        for name in dyn.needed:
            assert f"[{name}]" in readelf.stdout
        if dyn.runpath:
            assert "[" + ":".join(dyn.runpath) in readelf.stdout.replace("::", ":")
    found = native.resolve_needed(lib, "libetrt_gpufree_nvinfer.so.0")
    assert found is not None and os.path.exists(found)
    assert native.resolve_needed(lib, "libnothing.so") is None
    with pytest.raises(ValueError, match="not a 64-bit little-endian ELF"):
        native.read_elf_dynamic(__file__)


def test_a_checkout_has_no_native_build_and_says_how_to_get_one(monkeypatch):
    monkeypatch.delenv("ETRT_LIBRARY", raising=False)
    if (Path(native.__file__).parent / "_native").exists():
        pytest.skip("this etrt has a native build")
    assert native.library_path() is None and native.build_info() is None
    assert native.main(["--library"]) == 1
    monkeypatch.setenv("ETRT_LIBRARY", "/x/libetrt.so.0")
    assert native.library_path() == "/x/libetrt.so.0"


def test_setup_py_builds_against_the_environments_executorch_and_pins_it():
    text = (ROOT / "python" / "setup.py").read_text()
    assert 'INSTALL_RPATH = "$ORIGIN:$ORIGIN/../../../executorch/lib"' in text
    assert 'install_requires.append(f"executorch=={_et_version}")' in text
    toml = (ROOT / "python" / "pyproject.toml").read_text()
    assert 'dynamic = ["dependencies"]' in toml and '"cmake>=3.28' in toml


# --------------------------------------------------------------------------
# etrt.engine_builder


def _cpp_constants(data: bytes):
    """The constants' float values of an engine (the reader skips them)."""
    pos = 24
    (n,) = struct.unpack_from("<I", data, pos)
    pos += 4 + n + 1 + 8 + 8
    (n_io,) = struct.unpack_from("<I", data, pos)
    pos += 4
    for _ in range(n_io):
        (n,) = struct.unpack_from("<I", data, pos)
        pos += 4 + n + 3
        rank = data[pos]
        pos += 1 + 8 * rank
    (n_const,) = struct.unpack_from("<I", data, pos)
    pos += 4
    out = {}
    for _ in range(n_const):
        (n,) = struct.unpack_from("<I", data, pos)
        name = data[pos + 4:pos + 4 + n].decode()
        pos += 4 + n
        rank = data[pos]
        pos += 1 + 8 * rank
        (count,) = struct.unpack_from("<Q", data, pos)
        pos += 8
        out[name] = list(struct.unpack_from(f"<{count}f", data, pos))
        pos += 4 * count
    return out


def test_the_builder_writes_the_cpp_builders_bytes_for_the_same_calls():
    cpp = bytes.fromhex(B.CPP_ENGINE_HEX)
    values = _cpp_constants(cpp)
    b = EngineBuilder("decoder", tracing=True, switch_cost_ns=1234, device_memory_size=4096)
    b.add_input("ids", "int64", [1, -1]).add_input("pos", "int64", [1, -1]).add_output("logits", "float32", [1, -1, 4])
    decode, prefill = b.add_profile(), b.add_profile()
    for name in ("ids", "pos"):
        b.set_profile_shape(decode, name, [1, 1], [1, 1], [1, 1])
        b.set_profile_shape(prefill, name, [1, 2], [1, 64], [1, 128])
    b.add_constant("table", [16, 8], values["table"]).add_constant("w", [8, 4], values["w"])
    b.embedding("ids", "table", "hidden").matmul("hidden", "w", "logits")
    assert b.build() == cpp


def test_the_builder_writes_the_cpp_kv_engine_bytes_flags_and_alias():
    cpp = bytes.fromhex(B.CPP_KV_ENGINE_HEX)
    values = _cpp_constants(cpp)
    b = EngineBuilder("kv_step", tracing=True, cuda_mode=True, streamable_weights=True)
    b.add_input("q", "float32", [1, -1, 4]).add_input("cache", "float32", [1, 8, 4])
    b.add_input("new_kv", "float32", [1, -1, 4]).add_input("write_at", "int64", [1])
    b.add_output("attn", "float32", [1, -1, 4]).add_output("cache_out", "float32", [1, 8, 4])
    p = b.add_profile()
    for name in ("q", "new_kv"):
        b.set_profile_shape(p, name, [1, 1, 4], [1, 1, 4], [1, 8, 4])
    b.add_constant("wq", [4, 4], values["wq"])
    b.matmul("q", "wq", "qp").kv_cache_update("cache", "new_kv", "write_at", "cache_out")
    b.causal_attention("qp", "cache_out", "cache_out", "write_at", 0.5, "attn")
    data = b.build()
    assert data == cpp
    assert read_gpufree_engine(data).aliases() == {"cache_out": "cache"}


def test_a_rank_one_constant_makes_add_a_bias_add_on_either_side():
    b = EngineBuilder("bias")
    b.add_input("x", "float32", [2, 3]).add_output("y", "float32", [2, 3])
    b.add_constant("b", [3], [1, 2, 3]).add("b", "x", "y")
    eng = read_gpufree_engine(b.build())
    assert [(op.kind_name, eng.tensor_name(op.a), eng.tensor_name(op.b)) for op in eng.ops] == [("add_bias", "x", "b")]
    assert len(eng.profiles) == 1  # static inputs: one implicit profile


@pytest.mark.parametrize("build, message", [
    (lambda b: b.add_input("x", "float32", [1, -1]).add_output("y", "float32", [1, -1]).scale("x", 2, "y"),
     "has dynamic dims, so the engine needs add_profile()"),
    (lambda b: b.add_input("x", "float32", [2]).add_output("y", "float32", [2]).scale("nope", 2, "y"),
     "reads 'nope', which is not a tensor"),
    (lambda b: b.add_input("x", "complex", [2]), "unknown dtype 'complex'"),
    (lambda b: b.add_input("x", "float32", [2]).add_output("y", "float32", [3]).identity("x", "y"),
     "GPU-free NvInfer engine"),  # the reader's refusal: the output is declared [3]
    (lambda b: b.add_input("x", "float32", [1, -1]).add_output("y", "float32", [1, -1]).add_profile() + 1 and
     b.set_profile_shape(0, "x", [1, 1], [1, 1], [1, 1]).set_profile_shape(0, "x", [1, 1], [1, 1], [1, 1]),
     "called twice"),
])
def test_the_builder_refuses_what_would_not_load(build, message):
    b = EngineBuilder("bad")
    with pytest.raises(EngineBuildError, match=message):
        build(b)
        b.build()


def test_engine_builder_is_standard_library_only():
    code = ("import sys; import etrt.engine_builder; "
            "print(sorted(m for m in ('torch', 'numpy', 'executorch') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT / "python")})
    assert out.returncode == 0 and out.stdout.strip() == "[]", out.stderr


@pytest.mark.parametrize("text, count", [(b"0", 0), (b"123", 123), (b"9223372036854775807", 2**63 - 1),
                                         (b"9223372036854775808", None), (b"", None), (b"-1", None), (b"+1", None),
                                         (b" 1", None), (b"1 ", None), (b"1.5", None), (b"1\x00", None)])
def test_the_tools_read_a_byte_count_by_the_runtimes_own_rule(text, count):
    from etrt.analysis import parse_byte_count

    assert parse_byte_count(text) == count
