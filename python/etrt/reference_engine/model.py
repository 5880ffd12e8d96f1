"""The validation model: the C++ ``Model`` that the decoder fills and
validation checks (names as raw bytes until validation accepts them),
:class:`_Invalid` for what validation refuses, and tensor byte sizes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Optional, Tuple

from .format import _U64_MAX, ELEMENT_SIZES, MAX_RANK, MAX_TENSOR_BYTES, Shape, escape_name


@dataclass
class _Tensor:
    name: bytes
    is_input: bool
    flags: int
    dtype: int
    shape: Shape


@dataclass
class _Model:
    """The C++ Model, names as raw bytes until validation has accepted them."""

    label: bytes = b""
    flags: int = 0
    switch_cost_ns: int = 0
    requested_device_memory: int = 0
    io: List[_Tensor] = field(default_factory=list)
    constants: List[Tuple[bytes, Shape, int]] = field(default_factory=list)  # name, shape, value count
    intermediates: List[Tuple[bytes, int]] = field(default_factory=list)  # name, dtype
    profiles: List[List[Tuple[Shape, Shape, Shape]]] = field(default_factory=list)
    ops: List[Tuple[int, int, int, int, int, int, float]] = field(default_factory=list)

    @property
    def num_io(self) -> int:
        return len(self.io)

    @property
    def num_tensors(self) -> int:
        return len(self.io) + len(self.constants) + len(self.intermediates)

    def is_constant(self, t: int) -> bool:
        return len(self.io) <= t < len(self.io) + len(self.constants)

    def is_intermediate(self, t: int) -> bool:
        return len(self.io) + len(self.constants) <= t < self.num_tensors

    def name(self, t: int) -> bytes:
        if t < len(self.io):
            return self.io[t].name
        if self.is_constant(t):
            return self.constants[t - len(self.io)][0]
        return self.intermediates[t - len(self.io) - len(self.constants)][0]

    def dtype(self, t: int) -> int:
        if t < len(self.io):
            return self.io[t].dtype
        if self.is_constant(t):
            return 0  # float32
        return self.intermediates[t - len(self.io) - len(self.constants)][1]

    def constant_shape(self, t: int) -> Shape:
        return self.constants[t - len(self.io)][1]

    def quoted(self, t: int) -> str:
        return f"'{escape_name(self.name(t))}'"


class _Invalid(Exception):
    """What validate() refuses; the message follows ``reference engine: invalid engine: ``."""


def _element_size(dtype: int) -> int:
    return ELEMENT_SIZES[dtype] if 0 <= dtype < len(ELEMENT_SIZES) else 0


def _tensor_bytes(shape: Shape, dtype: int) -> Optional[int]:
    """numel x element size, None when dynamic, overflowing u64 on the way, or above MAX_TENSOR_BYTES."""
    n = _element_size(dtype)
    if n == 0 or len(shape) > MAX_RANK:
        return None
    for d in shape:
        if d < 0:
            return None
        n *= d
        if n > _U64_MAX:
            return None
    return n if n <= MAX_TENSOR_BYTES else None
