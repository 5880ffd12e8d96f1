"""etrt's delegate events in ExecuTorch's profiling tools (docs/profiling.md).

With an event tracer attached (``ETDumpGen`` around a C++ ``Module``, or
``enable_etdump=True`` in ExecuTorch's Python runtime), every etrt execution
logs its steps as delegate events named :data:`EVENT_NAMES`, each with a JSON
object as its metadata. Two things make them readable in
``executorch.devtools.Inspector``:

* the export side: a backend's ``preprocess`` returns
  ``PreprocessResult(..., debug_handle_map=debug_handle_map(edge_program))``, so
  the ETRecord maps each event name to the partition's nodes and the Inspector
  attributes the events to the delegate call (``debug_handles``,
  ``delegate_backend_name``);
* the reading side: ``Inspector(..., delegate_metadata_parser=parse_metadata)``
  turns each event's metadata, one JSON object per run, into columns.

Pure Python: it touches torch only through the objects it is given.
"""

from __future__ import annotations

import json
from typing import Any, Dict, Iterable, List, Tuple, Union

#: The delegate events, in the order an execution logs them (src/backend/execute/execution_trace.h: change both
#: together). Every execution that passes the profile choice logs "set shapes", "stage inputs", "enqueue" and "copy
#: back"; "profile switch" only when it changed profile; "device time" only on a device engine.
EVENT_NAMES: Tuple[str, ...] = (
    "etrt profile choice",
    "etrt profile switch",
    "etrt set shapes",
    "etrt stage inputs",
    "etrt enqueue",
    "etrt copy back",
    "etrt device time",
)


def _handles(node) -> Iterable[int]:
    handle = node.meta.get("debug_handle")
    if isinstance(handle, int):
        yield handle
    elif isinstance(handle, (tuple, list)):
        yield from (h for h in handle if isinstance(h, int))


def debug_handle_map(edge_program) -> Dict[str, Tuple[int, ...]]:
    """The ``debug_handle_map`` of a partition's ``PreprocessResult``: every event name -> the debug handles of the
    partition's operators (sorted), as ExecuTorch's ``DelegateMappingBuilder`` writes it for string identifiers.

    Every step concerns the whole engine, so each name maps to every node it computes. ``edge_program``: the
    ``ExportedProgram`` (or ``GraphModule``) ``preprocess`` receives. Empty when its nodes carry no debug handles.
    """
    graph_module = getattr(edge_program, "graph_module", edge_program)
    handles = sorted({h for node in graph_module.graph.nodes if node.op == "call_function" for h in _handles(node)})
    if not handles:
        return {}
    return {name: tuple(handles) for name in EVENT_NAMES}


def _decode(raw: Union[str, bytes, bytearray, List[int], None]) -> Dict[str, Any]:
    if raw is None or len(raw) == 0:
        return {}
    if isinstance(raw, list):
        raw = bytes(raw)
    if isinstance(raw, (bytes, bytearray)):
        raw = raw.decode("utf-8", errors="replace")
    try:
        value = json.loads(raw)
    except ValueError:
        return {"raw": raw}
    return value if isinstance(value, dict) else {"raw": raw}


def parse_metadata(raws: List[Any]) -> Dict[str, List[Any]]:
    """An ``Inspector`` ``delegate_metadata_parser``: an event's metadata, one JSON object per run, as one list per
    key (``{"profile": [1, 0, 1], "switched": [True, True, True]}``); a run without the key gets ``None``."""
    decoded = [_decode(r) for r in raws]
    keys: List[str] = []
    for d in decoded:
        keys.extend(k for k in d if k not in keys)
    return {k: [d.get(k) for d in decoded] for k in keys}


def etrt_events(inspector) -> List[Dict[str, Any]]:
    """etrt's events in an ``Inspector``, one dict per run of each event: its ``block`` (the EventBlock's index), its
    ``name``, ``run`` (its index among the block's runs), ``start`` (ExecuTorch's ticks: nanoseconds on Linux),
    ``duration`` (in the Inspector's target time scale, milliseconds by default), its parsed ``metadata``, and the
    ``debug_handles`` and ``backend`` the ETRecord attributed it to. Sort by ``start`` for the order of execution
    across blocks (executions with different steps, a switch or none, land in different blocks)."""
    out: List[Dict[str, Any]] = []
    for b, block in enumerate(inspector.event_blocks):
        for event in block.events:
            if not event.is_delegated_op or event.name not in EVENT_NAMES:
                continue
            raws = list(getattr(event, "raw_delegate_debug_metadatas", []) or [])
            durations = list(event.perf_data.raw) if event.perf_data is not None else []
            starts = list(getattr(event, "_start_time", None) or [])
            for i, duration in enumerate(durations):
                out.append({
                    "block": b,
                    "name": event.name,
                    "run": i,
                    "start": starts[i] if i < len(starts) else None,
                    "duration": duration,
                    "metadata": _decode(raws[i]) if i < len(raws) else {},
                    "debug_handles": event.debug_handles,
                    "backend": event.delegate_backend_name,
                })
    return out
