"""etrt.profiling without torch: the debug handle map an exporter returns and the Inspector's metadata parser
(docs/profiling.md). tests/export/test_profiling.py runs them against ExecuTorch's own exporter and Inspector."""

from types import SimpleNamespace

from etrt.profiling import EVENT_NAMES, debug_handle_map, parse_metadata


def _node(op, handle):
    return SimpleNamespace(op=op, meta={} if handle is None else {"debug_handle": handle})


def _program(*nodes):
    return SimpleNamespace(graph_module=SimpleNamespace(graph=SimpleNamespace(nodes=list(nodes))))


def test_every_event_name_maps_to_every_operator_of_the_partition():
    program = _program(_node("placeholder", 1), _node("call_function", 7), _node("call_function", 3),
                       _node("call_function", (4, 3)), _node("output", 9))
    mapping = debug_handle_map(program)
    assert set(mapping) == set(EVENT_NAMES)
    assert all(handles == (3, 4, 7) for handles in mapping.values())


def test_a_partition_without_debug_handles_maps_nothing():
    assert debug_handle_map(_program(_node("call_function", None))) == {}


def test_the_parser_gives_one_list_per_key_in_run_order():
    raws = ['{"profile":1,"switched":true}', b'{"profile":0,"switched":true,"pin_ignored":false}', ""]
    assert parse_metadata(raws) == {"profile": [1, 0, None], "switched": [True, True, None],
                                    "pin_ignored": [None, False, None]}


def test_the_parser_keeps_text_that_is_not_json():
    assert parse_metadata(["not json"]) == {"raw": ["not json"]}


def test_the_event_names_are_the_ones_the_delegate_logs():
    # src/backend/execute/execution_trace.h (kTraceStepNames, kTraceDeviceTimeName), in order.
    import re
    from pathlib import Path

    header = (Path(__file__).resolve().parents[2] / "src" / "backend" / "execute" / "execution_trace.h").read_text()
    steps = header[header.index("kTraceStepNames[]"):header.index("};", header.index("kTraceStepNames[]"))]
    device = re.search(r'kTraceDeviceTimeName\[\] = "([^"]+)"', header).group(1)
    assert tuple(re.findall(r'"([^"]+)"', steps)) + (device,) == EVENT_NAMES
