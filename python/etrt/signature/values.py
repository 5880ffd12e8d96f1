"""The signature's value types (:class:`Bounds`, :class:`InputSignature`,
:class:`SymbolicDim`, :class:`Regime`), its limits, :class:`SignatureError`,
and the shape and range formatting that validation and inspection messages
share."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Mapping, Sequence, Tuple

#: TensorRT's Dims holds at most 8 dimensions (same limit as etrt.blob).
MAX_RANK = 8
#: At most this many profiles (etrt.blob.MAX_PROFILES, docs/limits.md): the runtime refuses a blob with more.
MAX_PROFILES = 256

Shape = Tuple[int, ...]


class SignatureError(ValueError):
    """Not a valid profile signature; the message says which part and what to change."""


# --------------------------------------------------------------------------
# Formatting helpers (shared by validate/inspect messages)


def format_shape(shape: Sequence[int]) -> str:
    """``[1, 2048]``."""
    return "[" + ", ".join(str(d) for d in shape) + "]"


def format_range(lo: int, hi: int) -> str:
    """``7`` when ``lo == hi``, else ``lo..hi``."""
    return str(lo) if lo == hi else f"{lo}..{hi}"


def format_bounds(b: "Bounds", with_opt: bool = False) -> str:
    """``[1, 32..2048]`` (each dim as ``min..max``), optionally with ``(opt [1, 512])``."""
    text = "[" + ", ".join(format_range(lo, hi) for lo, hi in zip(b.min, b.max)) + "]"
    if with_opt and not b.is_static:
        text += f" (opt {format_shape(b.opt)})"
    return text


# --------------------------------------------------------------------------
# Value types


@dataclass(frozen=True)
class Bounds:
    """One input's bounds under one profile: ``min <= opt <= max`` per dimension."""

    min: Shape
    opt: Shape
    max: Shape

    @property
    def rank(self) -> int:
        return len(self.min)

    @property
    def is_static(self) -> bool:
        """True when the profile admits exactly one shape."""
        return self.min == self.max

    def contains(self, shape: Sequence[int]) -> bool:
        """True when ``shape`` has this rank and lies within ``[min, max]`` in every dimension."""
        return len(shape) == self.rank and all(lo <= d <= hi for lo, d, hi in zip(self.min, shape, self.max))

    def range(self, dim: int) -> Tuple[int, int]:
        """``(min[dim], max[dim])``."""
        return (self.min[dim], self.max[dim])

    def to_dict(self) -> Dict[str, List[int]]:
        return {"min": list(self.min), "opt": list(self.opt), "max": list(self.max)}


@dataclass(frozen=True)
class InputSignature:
    """One engine input (its TensorRT tensor name) and its bounds per profile index."""

    name: str
    profiles: Tuple[Bounds, ...]

    @property
    def rank(self) -> int:
        return self.profiles[0].rank if self.profiles else 0

    @property
    def is_static(self) -> bool:
        """True when every profile admits the same single shape."""
        return all(p.is_static for p in self.profiles) and len({p.min for p in self.profiles}) <= 1

    def dynamic_dims(self) -> List[int]:
        """Dimensions whose size is not one fixed number across all profiles."""
        return [d for d in range(self.rank)
                if len({(p.min[d], p.max[d]) for p in self.profiles}) > 1
                or any(p.min[d] != p.max[d] for p in self.profiles)]


@dataclass(frozen=True)
class SymbolicDim:
    """A named symbolic dimension: ``dim`` of ``input`` is the symbol ``name``;
    ``ranges[i]`` is its ``(lo, hi)`` under profile ``i``."""

    name: str
    input: str
    dim: int
    ranges: Tuple[Tuple[int, int], ...]


@dataclass(frozen=True)
class Regime:
    """What profile ``index`` of one engine admits: ``inputs[name]`` bounds and
    ``symbols[name] = (lo, hi)`` for the named symbolic dimensions."""

    index: int
    inputs: Mapping[str, Bounds]
    symbols: Mapping[str, Tuple[int, int]]

    def contains(self, shapes: Mapping[str, Sequence[int]]) -> bool:
        """True when every described input named in ``shapes`` fits; inputs the
        signature does not describe are ignored, a described input missing from
        ``shapes`` makes it False."""
        return all(name in shapes and b.contains(shapes[name]) for name, b in self.inputs.items())

    def describe(self) -> str:
        """``profile 1: seq_len 32..2048; input_ids [1, 32..2048] (opt [1, 512])``."""
        parts = [f"{name} {format_range(*r)}" for name, r in self.symbols.items()]
        parts += [f"{name} {format_bounds(b, with_opt=True)}" for name, b in self.inputs.items()]
        return f"profile {self.index}: " + ("; ".join(parts) if parts else "(no inputs)")
