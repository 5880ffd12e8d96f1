"""A delegate's delegate-owned state (the blob's ``delegate_state``) as the
runtime binds it at load (:func:`describe_states`)."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from .. import dtypes
from .delegates import DelegateInfo


def describe_states(d: "DelegateInfo") -> List[Dict[str, Any]]:
    """One dict per ``delegate_state`` entry: its name, input and output, whether the new value is written in place
    (the output is aliased to the input: no copy per call) or copied back, its shape, dtype and bytes where known (the
    engine's declared IO when readable, else the io_bindings), the named-data key of its initial value ("" = zeros),
    and ``problem``: why the runtime refuses it at load, or None."""
    md, eng = d.metadata, d.reference_engine
    if md is None or not md.delegate_state:
        return []
    aliases = {a.output: a.input for a in md.aliased_io}
    if eng is not None:
        aliases.update({o: i for o, i in eng.aliases().items() if o not in aliases})
        io = {t.name: (t.dtype, list(t.shape)) for t in eng.io}
    else:
        io = {b.name: (b.dtype, list(b.shape)) for b in md.io_bindings}
    out = []
    for s in md.delegate_state:
        dtype, shape = io.get(s.input, ("", []))
        out_dtype, out_shape = io.get(s.output, ("", []))
        in_place = aliases.get(s.output) == s.input
        problem: Optional[str] = None
        nbytes: Optional[int] = None
        if shape and all(x >= 0 for x in shape) and dtype:
            try:
                nbytes = dtypes.element_size(dtypes.normalize(dtype))
                for x in shape:
                    nbytes *= x
            except (KeyError, ValueError):
                nbytes = None
        elif any(x < 0 for x in shape):
            problem = (f"input '{s.input}' has a dynamic shape {shape}; a delegate-owned state has one static shape: "
                       "rebuild the engine with a static cache shape")
        if problem is None and s.output in aliases and not in_place:
            problem = f"output '{s.output}' is written in place into input '{aliases[s.output]}', not into '{s.input}'"
        if problem is None and out_dtype and dtype and not in_place and (out_dtype != dtype or out_shape != shape):
            problem = (f"output '{s.output}' is {out_dtype} {out_shape} but input '{s.input}' is {dtype} {shape}; the "
                       "new value of a state has the state's type and shape")
        out.append({"name": s.name, "input": s.input, "output": s.output, "in_place": in_place, "dtype": dtype,
                    "shape": shape, "bytes": nbytes, "initial_value": s.initial_value, "problem": problem})
    return out
