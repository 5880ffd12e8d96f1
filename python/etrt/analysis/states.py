"""A delegate's delegate-owned state (the blob's ``delegate_state``) as the
runtime binds it at load (:func:`describe_states`), read from the runtime's
own resolution (``etrt_delegate_resolve``)."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from .delegates import DelegateInfo


def describe_states(d: "DelegateInfo") -> List[Dict[str, Any]]:
    """One dict per ``delegate_state`` entry: its name, input and output, whether the new value is written in place
    (the output is aliased to the input: no copy per call) or copied back, its shape, dtype and bytes as the runtime
    resolved them against a GPU-free NvInfer engine (the io_bindings' declared ones, unchecked, for an opaque TensorRT
    plan), the named-data key of its initial value ("" = zeros), and ``problem``: the runtime's refusal of it at load,
    or None."""
    md, r = d.metadata, d.resolution
    if md is None or not md.delegate_state:
        return []
    resolved = r["states"] if r is not None else []
    refusal = r["refusal"] if r is not None else None
    declared = {b.name: b for b in md.io_bindings}
    aliases = {a.output: a.input for a in md.aliased_io}
    out = []
    for k, s in enumerate(md.delegate_state):
        problem: Optional[str] = None
        if k < len(resolved):
            st = resolved[k]
            dtype, shape, nbytes, in_place = st["dtype"], list(st["shape"]), st["bytes"], st["in_place"]
        else:
            b = declared.get(s.input)
            dtype, shape = (b.dtype, list(b.shape)) if b is not None else ("", [])
            nbytes, in_place = None, aliases.get(s.output) == s.input
            if refusal is not None and refusal["rule"] == "state" and refusal["entry"] == k:
                problem = refusal["message"]
        out.append({"name": s.name, "input": s.input, "output": s.output, "in_place": in_place, "dtype": dtype,
                    "shape": shape, "bytes": nbytes, "initial_value": s.initial_value, "problem": problem})
    return out
