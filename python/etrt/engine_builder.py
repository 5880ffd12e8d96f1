"""Writes engines of etrt's GPU-free NvInfer implementation (magic ``ETRF``,
format version 2) from Python: the same bytes the C++ builder
(``nvinfer/include/etrt_gpufree/builder.h``) produces for the same calls, so
an exporter -- a test partitioner's ``preprocess``, say -- can wrap a
GPU-free NvInfer engine into a TR01/TR02 blob without a C++ toolchain.

::

    from etrt.engine_builder import EngineBuilder

    b = EngineBuilder("proj")
    b.add_input("x", "float32", [1, -1, 8]).add_output("y", "float32", [1, -1, 4])
    decode, prefill = b.add_profile(), b.add_profile()
    b.set_profile_shape(decode, "x", [1, 1, 8], [1, 1, 8], [1, 1, 8])
    b.set_profile_shape(prefill, "x", [1, 2, 8], [1, 16, 8], [1, 64, 8])
    b.add_constant("w", [8, 4], weights)         # float32, row-major (any iterable of numbers)
    b.matmul("x", "w", "y")
    engine = b.build()                           # bytes; raises EngineBuildError

Ops (see the C++ builder for their exact semantics): ``embedding``, ``add``
(a rank-1 constant operand makes it a bias add over the last dim),
``scale``, ``matmul``, ``identity``, ``kv_cache_update`` (an in-place
update: its output shares the cache input's memory, as TensorRT's
``getAliasedInputTensor`` reports) and ``causal_attention``. An op output
that is not a declared IO tensor becomes an intermediate.

``build()`` checks what it writes by reading it back with
:func:`etrt.gpufree.read_gpufree_engine`; the C++ runtime
remains the authority on whether an engine runs. Pure Python, standard
library only.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Sequence, Tuple

from . import dtypes
from .dtypes import DATA_TYPES
from .gpufree import (
    FLAG_CUDA_MODE,
    FLAG_EXCLUSIVE_PROFILES,
    FLAG_STREAMABLE_WEIGHTS,
    FLAG_TRACING,
    FORMAT_VERSION,
    MAGIC,
    GpufreeEngineError,
    checksum,
    read_gpufree_engine,
)

__all__ = ["EngineBuildError", "EngineBuilder"]

_OP_KINDS = {"embedding": 1, "add": 2, "add_bias": 3, "scale": 4, "matmul": 5, "identity": 6,
             "kv_cache_update": 7, "causal_attention": 8}


class EngineBuildError(ValueError):
    """The engine described cannot be built; the message says what is wrong."""


def _dtype(value) -> int:
    name = dtypes.normalize(value)
    if name not in DATA_TYPES:
        raise EngineBuildError(f"unknown dtype {value!r}; use one of {', '.join(DATA_TYPES)}")
    return DATA_TYPES.index(name)


def _shape(dims: Iterable[int], what: str) -> Tuple[int, ...]:
    try:
        shape = tuple(int(d) for d in dims)
    except (TypeError, ValueError):
        raise EngineBuildError(f"{what}: a shape is a sequence of ints, got {dims!r}") from None
    if len(shape) > 8:
        raise EngineBuildError(f"{what}: rank {len(shape)} is above the maximum 8")
    return shape


def _flatten(values) -> List[float]:
    if hasattr(values, "detach"):  # a torch.Tensor
        values = values.detach().to("cpu").reshape(-1).tolist()
    elif hasattr(values, "tolist"):  # a numpy array
        values = values.tolist()
    out: List[float] = []

    def walk(v):
        if isinstance(v, (list, tuple)):
            for x in v:
                walk(x)
        else:
            out.append(float(v))

    walk(values)
    return out


@dataclass
class _Io:
    name: str
    is_input: bool
    dtype: int
    shape: Tuple[int, ...]


@dataclass
class _Op:
    kind: str
    a: str
    b: str = ""
    c: str = ""
    d: str = ""
    out: str = ""
    factor: float = 1.0


@dataclass
class EngineBuilder:
    """Declares IO tensors, optimization profiles, constants and ops; ``build()``
    returns the serialized engine. IO tensors keep the order they are added in
    (the engine's IO order); ops run in the order added."""

    label: str
    tracing: bool = False
    switch_cost_ns: int = 0
    device_memory_size: int = 0
    cuda_mode: bool = False
    streamable_weights: bool = False
    #: TensorRT 8.6's profile rules without kPROFILE_SHARING_0806 (flags bit 3): a profile is held by one context
    exclusive_profiles: bool = False
    _io: List[_Io] = field(default_factory=list)
    _constants: List[Tuple[str, Tuple[int, ...], List[float]]] = field(default_factory=list)
    _profiles: List[Dict[str, Tuple[Tuple[int, ...], Tuple[int, ...], Tuple[int, ...]]]] = field(default_factory=list)
    _ops: List[_Op] = field(default_factory=list)

    # ---- declarations ----

    def add_input(self, name: str, dtype, shape: Sequence[int]) -> "EngineBuilder":
        self._io.append(_Io(name, True, _dtype(dtype), _shape(shape, f"input '{name}'")))
        return self

    def add_output(self, name: str, dtype, shape: Sequence[int]) -> "EngineBuilder":
        self._io.append(_Io(name, False, _dtype(dtype), _shape(shape, f"output '{name}'")))
        return self

    def add_profile(self) -> int:
        """Appends an optimization profile and returns its index."""
        self._profiles.append({})
        return len(self._profiles) - 1

    def set_profile_shape(self, profile: int, input: str, min: Sequence[int], opt: Sequence[int],
                          max: Sequence[int]) -> "EngineBuilder":
        if not 0 <= profile < len(self._profiles):
            raise EngineBuildError(f"set_profile_shape({profile}, '{input}'): no profile {profile}; call add_profile()")
        if input in self._profiles[profile]:
            raise EngineBuildError(f"set_profile_shape({profile}, '{input}') called twice")
        what = f"profile {profile}, input '{input}'"
        self._profiles[profile][input] = (_shape(min, what), _shape(opt, what), _shape(max, what))
        return self

    def add_constant(self, name: str, shape: Sequence[int], values) -> "EngineBuilder":
        """A float32 weight, row-major: ``values`` is any (nested) iterable of numbers, a numpy array or a tensor."""
        self._constants.append((name, _shape(shape, f"constant '{name}'"), _flatten(values)))
        return self

    # ---- ops ----

    def embedding(self, ids: str, table: str, output: str) -> "EngineBuilder":
        return self._op(_Op("embedding", ids, table, out=output))

    def add(self, a: str, b: str, output: str) -> "EngineBuilder":
        return self._op(_Op("add", a, b, out=output))

    def scale(self, input: str, factor: float, output: str) -> "EngineBuilder":
        return self._op(_Op("scale", input, out=output, factor=float(factor)))

    def matmul(self, input: str, weight: str, output: str) -> "EngineBuilder":
        return self._op(_Op("matmul", input, weight, out=output))

    def identity(self, input: str, output: str) -> "EngineBuilder":
        return self._op(_Op("identity", input, out=output))

    def kv_cache_update(self, cache: str, update: str, write_indices: str, output: str) -> "EngineBuilder":
        return self._op(_Op("kv_cache_update", cache, update, write_indices, out=output))

    def causal_attention(self, q: str, k: str, v: str, positions: str, scale: float,
                         output: str) -> "EngineBuilder":
        return self._op(_Op("causal_attention", q, k, v, positions, out=output, factor=float(scale)))

    def _op(self, op: _Op) -> "EngineBuilder":
        self._ops.append(op)
        return self

    # ---- building ----

    def build(self) -> bytes:
        """The serialized engine; raises :class:`EngineBuildError` when the
        graph is invalid (with the reader's message when the bytes would not
        load)."""
        if not self.label:
            raise EngineBuildError("the engine has no label; give the builder a non-empty name")
        inputs = [t for t in self._io if t.is_input]
        profiles = self._resolve_profiles(inputs)

        ids: Dict[str, int] = {}
        dtypes: Dict[str, int] = {}
        for t in self._io:
            ids.setdefault(t.name, len(ids))
            dtypes[t.name] = t.dtype
        for name, _, _ in self._constants:
            ids.setdefault(name, len(ids))
            dtypes[name] = 0
        constant_ranks = {name: len(shape) for name, shape, _ in self._constants}
        intermediates: List[Tuple[str, int]] = []
        first_intermediate = len(self._io) + len(self._constants)
        records = []
        for k, spec in enumerate(self._ops):
            where = f"op #{k} -> '{spec.out}'"
            operands = []
            for name in (spec.a, spec.b, spec.c, spec.d):
                if not name:
                    operands.append(-1)
                    continue
                if name not in ids:
                    raise EngineBuildError(f"{where} reads '{name}', which is not a tensor")
                operands.append(ids[name])
            a, b, c, d = operands
            kind = spec.kind
            if kind == "add":
                # A rank-1 constant on either side is a bias over the other operand's last dim (as in C++).
                a_bias, b_bias = constant_ranks.get(spec.a) == 1, constant_ranks.get(spec.b) == 1
                if a_bias and not b_bias:
                    a, b = b, a
                kind = "add_bias" if a_bias or b_bias else "add"
            if spec.out not in ids:
                produced = dtypes[spec.a] if kind == "identity" else 0
                ids[spec.out] = first_intermediate + len(intermediates)
                dtypes[spec.out] = produced
                intermediates.append((spec.out, produced))
            if not math.isfinite(spec.factor):
                raise EngineBuildError(f"{where}: the factor must be finite")
            records.append(struct.pack("<Biiiiif", _OP_KINDS[kind], a, b, c, d, ids[spec.out], spec.factor))

        payload = bytearray()

        def string(s: str) -> None:
            raw = s.encode("utf-8")
            payload.extend(struct.pack("<I", len(raw)))
            payload.extend(raw)

        def shape(s: Tuple[int, ...]) -> None:
            payload.extend(struct.pack("<B", len(s)))
            payload.extend(struct.pack(f"<{len(s)}q", *s))

        string(self.label)
        flags = ((FLAG_TRACING if self.tracing else 0) | (FLAG_CUDA_MODE if self.cuda_mode else 0) |
                 (FLAG_STREAMABLE_WEIGHTS if self.streamable_weights else 0) |
                 (FLAG_EXCLUSIVE_PROFILES if self.exclusive_profiles else 0))
        payload.extend(struct.pack("<Bq", flags, self.switch_cost_ns))
        payload.extend(struct.pack("<Q", self.device_memory_size))
        payload.extend(struct.pack("<I", len(self._io)))
        for t in self._io:
            string(t.name)
            payload.extend(struct.pack("<BBB", 1 if t.is_input else 0, 0, t.dtype))
            shape(t.shape)
        payload.extend(struct.pack("<I", len(self._constants)))
        for name, dims, values in self._constants:
            string(name)
            shape(dims)
            payload.extend(struct.pack("<Q", len(values)))
            payload.extend(struct.pack(f"<{len(values)}f", *values))
        payload.extend(struct.pack("<I", len(intermediates)))
        for name, dtype in intermediates:
            string(name)
            payload.extend(struct.pack("<B", dtype))
        payload.extend(struct.pack("<I", len(profiles)))
        for row in profiles:
            for mn, opt, mx in row:
                shape(mn)
                shape(opt)
                shape(mx)
        payload.extend(struct.pack("<I", len(records)))
        for record in records:
            payload.extend(record)

        header = MAGIC + struct.pack("<IQII", FORMAT_VERSION, len(payload), checksum(bytes(payload)), 0)
        engine = header + bytes(payload)
        # The runtime's deserializer owns the format's rules: where libetrt is loadable, it reads the engine back.
        from . import _reader

        if _reader.available():
            try:
                read_gpufree_engine(engine)
            except GpufreeEngineError as e:
                raise EngineBuildError(f"engine '{self.label}': {e}") from None
        return engine

    def _resolve_profiles(self, inputs: List[_Io]):
        names = [t.name for t in inputs]
        for p, bounds in enumerate(self._profiles):
            for name in bounds:
                if name not in names:
                    raise EngineBuildError(f"set_profile_shape({p}, '{name}'): no input of that name")
        profiles = self._profiles
        if not profiles:
            dynamic = [t for t in inputs if any(d < 0 for d in t.shape)]
            if dynamic:
                raise EngineBuildError(
                    f"input '{dynamic[0].name}' {list(dynamic[0].shape)} has dynamic dims, so the engine needs "
                    "add_profile() and set_profile_shape()")
            profiles = [{}]
        rows = []
        for p, bounds in enumerate(profiles):
            row = []
            for t in inputs:
                if t.name in bounds:
                    row.append(bounds[t.name])
                elif any(d < 0 for d in t.shape):
                    raise EngineBuildError(f"profile {p} has no bounds for input '{t.name}' {list(t.shape)}; "
                                           "call set_profile_shape")
                else:
                    row.append((t.shape, t.shape, t.shape))
            rows.append(row)
        return rows
