"""Turning what callers pass (ints, shapes, bounds in their accepted
spellings) into the signature's value types, and checking one input's
bounds; :class:`SignatureError` for anything else."""

from __future__ import annotations

import operator
from typing import Any, Iterable, Mapping

from .values import MAX_RANK, Bounds, InputSignature, Shape, SignatureError

_INT64_MAX = 2**63 - 1


def _int(v: Any, where: str) -> int:
    # operator.index takes ints and int-likes (torch.Size entries, numpy ints),
    # never floats, strings or bools.
    if isinstance(v, bool):
        raise SignatureError(f"{where} must be an integer, got {v!r}")
    try:
        v = operator.index(v)
    except TypeError:
        raise SignatureError(f"{where} must be an integer, got {v!r}") from None
    if not 0 <= v <= _INT64_MAX:
        raise SignatureError(f"{where} is {v}; dimensions must be between 0 and 2^63-1")
    return v


def _shape(v: Any, where: str) -> Shape:
    if isinstance(v, (str, bytes, Mapping)) or not isinstance(v, Iterable):
        raise SignatureError(f"{where} must be a list of integers, got {v!r}")
    return tuple(_int(d, f"{where}[{i}]") for i, d in enumerate(v))


def _bounds_from(v: Any, where: str) -> Bounds:
    """Accepts ``{"min","opt","max"}``, ``{"min_shape","opt_shape","max_shape"}``,
    ``{"shape"}`` (static), a ``(min, opt, max)`` triple, or an object with such
    a ``shape`` dict (duck-typed ``torch_tensorrt.Input``)."""
    if not isinstance(v, (Mapping, list, tuple, Bounds)):
        shape_attr = getattr(v, "shape", None)
        if isinstance(shape_attr, Mapping):
            v = shape_attr
        elif shape_attr is not None:
            v = {"shape": shape_attr}
    if isinstance(v, Bounds):
        mn, opt, mx = v.min, v.opt, v.max
    elif isinstance(v, Mapping):
        keys = set(v)
        if keys >= {"min", "opt", "max"}:
            mn, opt, mx = v["min"], v["opt"], v["max"]
        elif keys >= {"min_shape", "opt_shape", "max_shape"}:
            mn, opt, mx = v["min_shape"], v["opt_shape"], v["max_shape"]
        elif "shape" in keys:
            mn = opt = mx = v["shape"]
        else:
            raise SignatureError(
                f"{where} must give min/opt/max (or min_shape/opt_shape/max_shape, or shape for a static "
                f"input); got keys {sorted(keys)}")
    elif isinstance(v, (list, tuple)) and len(v) == 3 and all(
            isinstance(s, (list, tuple)) or hasattr(s, "__iter__") and not isinstance(s, (str, bytes)) for s in v):
        mn, opt, mx = v
    else:
        raise SignatureError(f"{where} must be {{'min': [...], 'opt': [...], 'max': [...]}} or a (min, opt, max) "
                             f"triple, got {v!r}")
    return Bounds(_shape(mn, f"{where}.min"), _shape(opt, f"{where}.opt"), _shape(mx, f"{where}.max"))


def _check_input(inp: InputSignature, num_profiles: int, index: int) -> None:
    what = f"input {index} '{inp.name}'"
    if not inp.name:
        raise SignatureError(f"input {index} has an empty name; use the engine's TensorRT input tensor name")
    if len(inp.profiles) != num_profiles:
        raise SignatureError(f"{what} has bounds for {len(inp.profiles)} profiles but the signature has "
                             f"{num_profiles}; give every input bounds under every profile")
    rank = inp.profiles[0].rank
    if rank > MAX_RANK:
        raise SignatureError(f"{what} has rank {rank}; TensorRT tensors have at most {MAX_RANK} dimensions")
    for p, b in enumerate(inp.profiles):
        if not (len(b.min) == len(b.opt) == len(b.max)):
            raise SignatureError(f"{what} profile {p} has min of rank {len(b.min)}, opt of rank {len(b.opt)} and "
                                 f"max of rank {len(b.max)}; they must have the same rank")
        if b.rank != rank:
            raise SignatureError(f"{what} has rank {b.rank} in profile {p} but rank {rank} in profile 0; an input "
                                 "has one rank in every profile")
        for d in range(rank):
            if not b.min[d] <= b.opt[d] <= b.max[d]:
                raise SignatureError(f"{what} profile {p} dim {d} has min {b.min[d]}, opt {b.opt[d]}, max "
                                     f"{b.max[d]}; bounds must satisfy 0 <= min <= opt <= max")
