"""Shape inference through the op table at a profile's min, opt or max
input shapes, and the scratch memory plan (``infer_shapes`` and
``plan_memory`` of ``nvinfer/src/model.cpp``, word for word in its
messages)."""

from __future__ import annotations

from typing import List, Optional

from .format import (MAX_DEVICE_MEMORY, MAX_RANK, OP_ADD, OP_ADD_BIAS, OP_CAUSAL_ATTENTION, OP_EMBEDDING,
                     OP_KV_CACHE_UPDATE, OP_MATMUL, SCRATCH_ALIGNMENT, Shape, _kind_name, _shape_str, escape_name)
from .model import _Invalid, _Model, _tensor_bytes


def _initial_shapes(m: _Model) -> List[Shape]:
    return [()] * m.num_tensors


def _set_inputs(m: _Model, shapes: List[Shape], profile: int, which: int) -> None:
    k = 0
    for i, t in enumerate(m.io):
        if t.is_input:
            shapes[i] = m.profiles[profile][k][which]
            k += 1


def _infer_shapes(m: _Model, shapes: List[Shape]) -> Optional[str]:
    """nvinfer's infer_shapes: fills every tensor's shape from the inputs'; the refusal, or None."""
    n_io = m.num_io
    for i, (_, shape, _) in enumerate(m.constants):
        shapes[n_io + i] = shape

    def op_name(k: int) -> str:
        kind, out = m.ops[k][0], m.ops[k][5]
        return f"op #{k} ({_kind_name(kind)} -> {m.quoted(out)})"

    for k, (kind, a_id, b_id, c_id, d_id, out_id, _) in enumerate(m.ops):
        a = shapes[a_id]
        out = a
        if kind == OP_EMBEDDING:
            table = shapes[b_id]
            if len(a) >= MAX_RANK:
                return f"{op_name(k)}: ids {_shape_str(a)} leave no room for the hidden dim"
            out = a + (table[1],)
        elif kind == OP_ADD:
            if a != shapes[b_id]:
                return (f"{op_name(k)}: operands {m.quoted(a_id)} {_shape_str(a)} and {m.quoted(b_id)} "
                        f"{_shape_str(shapes[b_id])} must have the same shape")
        elif kind == OP_ADD_BIAS:
            bias = shapes[b_id]
            if len(a) < 1 or a[-1] != bias[0]:
                return f"{op_name(k)}: input {m.quoted(a_id)} {_shape_str(a)} must end in the bias length {bias[0]}"
        elif kind == OP_MATMUL:
            w = shapes[b_id]
            if len(a) < 1 or a[-1] != w[0]:
                return (f"{op_name(k)}: input {m.quoted(a_id)} {_shape_str(a)} must end in K = {w[0]} to multiply "
                        f"weight {m.quoted(b_id)} {_shape_str(w)}")
            out = a[:-1] + (w[1],)
        elif kind == OP_KV_CACHE_UPDATE:
            update, indices = shapes[b_id], shapes[c_id]
            if (len(a) != 3 or len(update) != 3 or update[0] != a[0] or update[2] != a[2] or update[1] > a[1]):
                return (f"{op_name(k)}: cache {m.quoted(a_id)} {_shape_str(a)} must be [B, T, D] and update "
                        f"{m.quoted(b_id)} {_shape_str(update)} [B, S, D] with S <= T")
            if len(indices) != 1 or indices[0] != a[0]:
                return (f"{op_name(k)}: write indices {m.quoted(c_id)} {_shape_str(indices)} must be [B] = "
                        f"[{a[0]}]")
        elif kind == OP_CAUSAL_ATTENTION:
            keys, values, positions = shapes[b_id], shapes[c_id], shapes[d_id]
            if (len(a) != 3 or len(keys) != 3 or len(values) != 3 or keys[0] != a[0] or keys[2] != a[2]
                    or values[0] != a[0] or values[1] != keys[1] or a[1] > keys[1]):
                return (f"{op_name(k)}: queries {m.quoted(a_id)} {_shape_str(a)}, keys {m.quoted(b_id)} "
                        f"{_shape_str(keys)} and values {m.quoted(c_id)} {_shape_str(values)} must be [B, S, D], "
                        "[B, T, D] and [B, T, E], S <= T")
            if len(positions) != 1 or positions[0] != a[0]:
                return (f"{op_name(k)}: positions {m.quoted(d_id)} {_shape_str(positions)} must be [B] = "
                        f"[{a[0]}]")
            out = a[:2] + (values[2],)
        if out_id < n_io:
            declared = m.io[out_id].shape
            if len(declared) != len(out) or any(0 <= dd != o for dd, o in zip(declared, out)):
                return (f"{op_name(k)} produces {_shape_str(out)} but output {m.quoted(out_id)} is declared "
                        f"{_shape_str(declared)}")
        shapes[out_id] = out
    return None


def _plan_memory(m: _Model) -> int:
    """nvinfer's plan_memory: the scratch a context needs (device_memory_size()); raises _Invalid."""
    need = [0] * len(m.intermediates)
    shapes = _initial_shapes(m)
    base = m.num_io + len(m.constants)
    for p in range(len(m.profiles)):
        _set_inputs(m, shapes, p, 2)
        error = _infer_shapes(m, shapes)
        if error is not None:
            raise _Invalid(error)
        for i, (name, dtype) in enumerate(m.intermediates):
            nbytes = _tensor_bytes(shapes[base + i], dtype)
            if nbytes is None:
                raise _Invalid(f"intermediate '{escape_name(name)}' is too large under profile {p}")
            need[i] = max(need[i], nbytes)
    offset = 0
    for n in need:
        offset += (n + SCRATCH_ALIGNMENT - 1) // SCRATCH_ALIGNMENT * SCRATCH_ALIGNMENT
        if offset > MAX_DEVICE_MEMORY:
            raise _Invalid(f"the intermediates need more than {MAX_DEVICE_MEMORY} bytes of scratch memory, the limit")
    return max(offset, m.requested_device_memory)
