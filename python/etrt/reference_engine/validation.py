"""Validation of a decoded model (``validate()`` of
``nvinfer/src/model.cpp``, word for word in its messages): structure,
names, limits, profiles and the op table, then every profile's shapes and
the memory plan (:mod:`etrt.reference_engine.shapes`)."""

from __future__ import annotations

import math
from typing import Dict

from .format import (DTYPES, MAX_CONSTANTS, MAX_DEVICE_MEMORY, MAX_DIM, MAX_INTERMEDIATES, MAX_IO_TENSORS,
                     MAX_NAME_LENGTH, MAX_OPS, MAX_PROFILE_ENTRIES, MAX_PROFILES, MAX_RANK, MAX_SHAPE_INFERENCE_WORK,
                     MAX_SWITCH_COST_NS, OP_ADD, OP_ADD_BIAS, OP_CAUSAL_ATTENTION, OP_EMBEDDING, OP_IDENTITY, OP_KINDS,
                     OP_KV_CACHE_UPDATE, OP_MATMUL, OP_SCALE, Shape, _is_valid_utf8, _kind_name, _shape_str,
                     escape_name)
from .model import _Invalid, _Model, _tensor_bytes
from .shapes import _infer_shapes, _initial_shapes, _plan_memory, _set_inputs


def _valid_shape(s: Shape, allow_dynamic: bool) -> bool:
    return len(s) <= MAX_RANK and all((allow_dynamic and d == -1) or 0 <= d <= MAX_DIM for d in s)


def _check_name(name: bytes, what: str) -> None:
    if len(name) > MAX_NAME_LENGTH:
        raise _Invalid(f"{what} is {len(name)} bytes long, above the limit of {MAX_NAME_LENGTH}")
    if b"\x00" in name:
        raise _Invalid(f"{what} '{escape_name(name)}' contains a NUL byte; NvInfer names are C strings, so no caller "
                       "could name it")
    if not _is_valid_utf8(name):
        raise _Invalid(f"{what} '{escape_name(name)}' is not valid UTF-8")


def _operand_count(kind: int) -> int:
    if kind in (OP_SCALE, OP_IDENTITY):
        return 1
    if kind == OP_KV_CACHE_UPDATE:
        return 3
    if kind == OP_CAUSAL_ATTENTION:
        return 4
    return 2


def _validate_structure(m: _Model) -> None:
    if not m.label:
        raise _Invalid("the engine has no label; give the builder a non-empty name")
    _check_name(m.label, "the label")
    if not m.io:
        raise _Invalid("the engine has no IO tensors")
    for n, limit, what in ((len(m.io), MAX_IO_TENSORS, "IO tensors"), (len(m.constants), MAX_CONSTANTS, "constants"),
                           (len(m.intermediates), MAX_INTERMEDIATES, "intermediates"), (len(m.ops), MAX_OPS, "ops"),
                           (len(m.profiles), MAX_PROFILES, "optimization profiles")):
        if n > limit:
            raise _Invalid(f"the engine has {n} {what}, above the limit of {limit}")
    n_inputs = sum(1 for t in m.io if t.is_input)
    n_profiles = len(m.profiles)
    if n_profiles * n_inputs > MAX_PROFILE_ENTRIES:
        raise _Invalid(f"{n_profiles} profiles x {n_inputs} inputs = {n_profiles * n_inputs} profile bounds, above the "
                       f"limit of {MAX_PROFILE_ENTRIES}")
    if n_profiles * len(m.ops) > MAX_SHAPE_INFERENCE_WORK:
        raise _Invalid(f"{n_profiles} profiles x {len(m.ops)} ops = {n_profiles * len(m.ops)} shape inferences per "
                       f"bound, above the limit of {MAX_SHAPE_INFERENCE_WORK}")

    names: Dict[bytes, int] = {}
    for t in range(m.num_tensors):
        name = m.name(t)
        if not name:
            raise _Invalid(f"tensor #{t} has an empty name")
        _check_name(name, f"tensor #{t} name")
        if name in names:
            raise _Invalid(f"tensor name '{escape_name(name)}' is used twice; names must be unique")
        names[name] = t

    has_output = False
    for t in m.io:
        name = escape_name(t.name)
        if not _valid_shape(t.shape, True):
            raise _Invalid(f"IO tensor '{name}' has an invalid shape {_shape_str(t.shape)} (rank 0..{MAX_RANK}, dims "
                           f"-1 or 0..{MAX_DIM})")
        if t.is_input and t.flags & 4:
            raise _Invalid(f"input '{name}' is marked data-dependent; only outputs can be")
        if not t.is_input and t.flags & 1:
            raise _Invalid(f"output '{name}' is marked as a shape tensor; only inputs can be")
        has_output = has_output or not t.is_input
    if not has_output:
        raise _Invalid("the engine has no outputs")

    for cname, shape, count in m.constants:
        name = escape_name(cname)
        if not _valid_shape(shape, False):
            raise _Invalid(f"constant '{name}' has an invalid shape {_shape_str(shape)}; constants need static dims")
        nbytes = _tensor_bytes(shape, 0)
        if nbytes is None:
            raise _Invalid(f"constant '{name}' is too large")
        if count != nbytes // 4:
            raise _Invalid(f"constant '{name}' of shape {_shape_str(shape)} needs {nbytes // 4} values, got {count}")

    if not m.profiles:
        raise _Invalid("the engine has no optimization profiles; it needs at least one")
    for p, profile in enumerate(m.profiles):
        where = f"profile {p}"
        if len(profile) != n_inputs:  # the decoder cannot make one; kept for the builder's sake
            raise _Invalid(f"{where} has bounds for {len(profile)} inputs, the engine has {n_inputs}")
        k = 0
        for t in m.io:
            if not t.is_input:
                continue
            mn, opt, mx = profile[k]
            k += 1
            name = escape_name(t.name)
            rank = len(t.shape)
            for b in (mn, opt, mx):
                if len(b) != rank or not _valid_shape(b, False):
                    raise _Invalid(f"{where}, input '{name}': bounds min {_shape_str(mn)} opt {_shape_str(opt)} max "
                                   f"{_shape_str(mx)} must be static shapes of the declared rank {rank}")
            for d in range(rank):
                dim = f"{where}, input '{name}' dim {d}: "
                if t.shape[d] >= 0 and (mn[d] != t.shape[d] or opt[d] != t.shape[d] or mx[d] != t.shape[d]):
                    raise _Invalid(f"{dim}declared static {t.shape[d]} but the profile says min {mn[d]} opt {opt[d]} "
                                   f"max {mx[d]}")
                if mn[d] > opt[d] or opt[d] > mx[d]:
                    raise _Invalid(f"{dim}needs min <= opt <= max, got {mn[d]} <= {opt[d]} <= {mx[d]}")
            if _tensor_bytes(mx, t.dtype) is None:
                raise _Invalid(f"{where}, input '{name}': max shape {_shape_str(mx)} is too large")

    if not 0 <= m.switch_cost_ns <= MAX_SWITCH_COST_NS:
        raise _Invalid(f"switch cost {m.switch_cost_ns} ns is outside [0, {MAX_SWITCH_COST_NS}]")
    if m.requested_device_memory > MAX_DEVICE_MEMORY:
        raise _Invalid(f"device memory size {m.requested_device_memory} is above the limit {MAX_DEVICE_MEMORY}")

    n_tensors = m.num_tensors
    available = [m.is_constant(t) or (t < m.num_io and m.io[t].is_input) for t in range(n_tensors)]
    updated_by: Dict[int, int] = {}
    for k, (kind, a, b, c, d, out, factor) in enumerate(m.ops):
        where = f"op #{k} ({_kind_name(kind)})"
        if kind not in OP_KINDS:
            raise _Invalid(f"{where} has an unknown kind")
        arity = _operand_count(kind)
        operands = (a, b, c, d)
        if not 0 <= out < n_tensors:
            raise _Invalid(f"{where} refers to a tensor that does not exist")
        for i in range(4):
            if i < arity:
                if not 0 <= operands[i] < n_tensors:
                    raise _Invalid(f"{where} refers to a tensor that does not exist")
            elif operands[i] != -1:
                raise _Invalid(f"{where} has operand {i} set, but {_kind_name(kind)} takes {arity}")
        writable = m.is_intermediate(out) or (out < m.num_io and not m.io[out].is_input)
        if not writable:
            raise _Invalid(f"{where} writes {m.quoted(out)}, which is not an output or intermediate")
        if available[out]:
            raise _Invalid(f"{where} writes {m.quoted(out)}, which another op already wrote")
        for operand in operands:
            if operand < 0:
                continue
            if not available[operand]:
                raise _Invalid(f"{where} reads {m.quoted(operand)} before any op writes it")
            if operand < m.num_io and m.io[operand].flags & 1:
                raise _Invalid(f"{where} reads shape tensor {m.quoted(operand)}; ops cannot compute on those")
        expect = where + ": "
        is_float = (lambda t: m.dtype(t) == 0)
        is_index = (lambda t: m.dtype(t) in (5, 6))
        if kind == OP_EMBEDDING:
            if m.dtype(a) not in (5, 6):
                raise _Invalid(f"{expect}ids {m.quoted(a)} must be int64 or int32, not {DTYPES[m.dtype(a)]}")
            if not m.is_constant(b) or len(m.constant_shape(b)) != 2:
                raise _Invalid(f"{expect}table {m.quoted(b)} must be a constant of shape [V, H]")
        elif kind == OP_ADD:
            if not is_float(a) or not is_float(b):
                raise _Invalid(f"{expect}operands {m.quoted(a)} and {m.quoted(b)} must be float32")
        elif kind == OP_ADD_BIAS:
            if not is_float(a):
                raise _Invalid(f"{expect}input {m.quoted(a)} must be float32")
            if not m.is_constant(b) or len(m.constant_shape(b)) != 1:
                raise _Invalid(f"{expect}bias {m.quoted(b)} must be a constant of shape [H]")
        elif kind == OP_SCALE:
            if not is_float(a):
                raise _Invalid(f"{expect}input {m.quoted(a)} must be float32")
            if not math.isfinite(factor):
                raise _Invalid(f"{expect}scale factor must be finite")
        elif kind == OP_MATMUL:
            if not is_float(a):
                raise _Invalid(f"{expect}input {m.quoted(a)} must be float32")
            if not m.is_constant(b) or len(m.constant_shape(b)) != 2:
                raise _Invalid(f"{expect}weight {m.quoted(b)} must be a constant of shape [K, N]")
        elif kind == OP_KV_CACHE_UPDATE:
            cache_is_input = a < m.num_io and m.io[a].is_input
            out_is_output = out < m.num_io and not m.io[out].is_input
            if not cache_is_input or not is_float(a):
                raise _Invalid(f"{expect}cache {m.quoted(a)} must be a float32 engine input")
            if not out_is_output:
                raise _Invalid(f"{expect}its result {m.quoted(out)} must be an engine output: it shares the cache "
                               "input's memory")
            if m.io[out].shape != m.io[a].shape:
                raise _Invalid(f"{expect}output {m.quoted(out)} is declared {_shape_str(m.io[out].shape)} but the "
                               f"cache {m.quoted(a)} it aliases is {_shape_str(m.io[a].shape)}")
            if a in updated_by:
                raise _Invalid(f"{expect}cache {m.quoted(a)} is already updated by op #{updated_by[a]}; an input is "
                               "aliased by one output at most")
            updated_by[a] = k
            if not is_float(b):
                raise _Invalid(f"{expect}update {m.quoted(b)} must be float32")
            if not is_index(c):
                raise _Invalid(f"{expect}write indices {m.quoted(c)} must be int32 or int64")
        elif kind == OP_CAUSAL_ATTENTION:
            if not is_float(a) or not is_float(b) or not is_float(c):
                raise _Invalid(f"{expect}queries {m.quoted(a)}, keys {m.quoted(b)} and values {m.quoted(c)} must be "
                               "float32")
            if not is_index(d):
                raise _Invalid(f"{expect}positions {m.quoted(d)} must be int32 or int64")
            if not math.isfinite(factor):
                raise _Invalid(f"{expect}scale factor must be finite")
        produced = m.dtype(a) if kind == OP_IDENTITY else 0
        if m.dtype(out) != produced:
            raise _Invalid(f"{where} produces {DTYPES[produced]} but {m.quoted(out)} is {DTYPES[m.dtype(out)]}")
        available[out] = True
    for t in range(n_tensors):
        if not available[t]:
            raise _Invalid(f"{'intermediate ' if m.is_intermediate(t) else 'output '}{m.quoted(t)} is never written "
                           "by any op")


def _validate(m: _Model) -> int:
    """validate(): structure, every profile's min, opt and max shapes, the memory plan; returns the plan's size."""
    _validate_structure(m)
    shapes = _initial_shapes(m)
    for p in range(len(m.profiles)):
        for w, which in enumerate(("min", "opt", "max")):
            _set_inputs(m, shapes, p, w)
            error = _infer_shapes(m, shapes)
            if error is not None:
                raise _Invalid(f"profile {p} ({which} shapes): {error}")
    return _plan_memory(m)
