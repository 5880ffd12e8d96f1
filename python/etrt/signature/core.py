"""The :class:`Signature` of one engine: construction from bounds,
Torch-TensorRT profiles, JSON or a blob; its canonical JSON; and the queries
validation asks of it."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from .parsing import _bounds_from, _check_input, _int, _shape
from .values import MAX_PROFILES, Bounds, InputSignature, Regime, SignatureError, SymbolicDim, format_range


@dataclass(frozen=True, eq=True)
class Signature:
    """The canonical profile signature of one engine.

    ``inputs`` keep the order given (normally the engine's binding order);
    ``symbolic_dims`` are kept sorted by (input position, dim), so that two
    equal signatures have the same canonical JSON and vice versa.
    Construct it with :meth:`from_bounds`, :meth:`from_torch_trt`,
    :meth:`from_dict` / :meth:`from_json` or :meth:`from_blob`.
    """

    num_profiles: int
    inputs: Tuple[InputSignature, ...]
    symbolic_dims: Tuple[SymbolicDim, ...] = ()

    def __post_init__(self) -> None:
        if isinstance(self.num_profiles, bool) or not isinstance(self.num_profiles, int):
            raise SignatureError(f"num_profiles must be an integer, got {self.num_profiles!r}")
        if self.num_profiles < 1:
            raise SignatureError(f"num_profiles is {self.num_profiles}; an engine has at least one optimization "
                                 "profile")
        if self.num_profiles > MAX_PROFILES:
            raise SignatureError(f"num_profiles is {self.num_profiles}, above the limit of {MAX_PROFILES} (the "
                                 "runtime refuses more)")
        object.__setattr__(self, "inputs", tuple(self.inputs))
        positions: Dict[str, int] = {}
        for i, inp in enumerate(self.inputs):
            if inp.name in positions:
                raise SignatureError(f"inputs {positions[inp.name]} and {i} are both named '{inp.name}'; describe "
                                     "each input once")
            positions[inp.name] = i
            _check_input(inp, self.num_profiles, i)
        seen: Dict[Tuple[str, int], str] = {}
        for s in self.symbolic_dims:
            what = f"symbolic dim '{s.name}'"
            if not s.name:
                raise SignatureError(f"a symbolic dim of input '{s.input}' has an empty name; name it (e.g. "
                                     "'seq_len') or leave it out")
            if s.input not in positions:
                raise SignatureError(f"{what} refers to input '{s.input}', which the signature does not describe; "
                                     f"described inputs: {', '.join(positions) or 'none'}")
            rank = self.inputs[positions[s.input]].rank
            if isinstance(s.dim, bool) or not isinstance(s.dim, int) or not 0 <= s.dim < rank:
                raise SignatureError(f"{what} is dim {s.dim} of input '{s.input}', which has rank {rank}")
            if len(s.ranges) != self.num_profiles:
                raise SignatureError(f"{what} of input '{s.input}' has {len(s.ranges)} ranges but the signature has "
                                     f"{self.num_profiles} profiles; give one [lo, hi] per profile")
            for p, r in enumerate(s.ranges):
                if len(r) != 2 or not 0 <= r[0] <= r[1]:
                    raise SignatureError(f"{what} range {p} is {list(r)}; a range is [lo, hi] with 0 <= lo <= hi")
            key = (s.input, s.dim)
            if key in seen:
                raise SignatureError(f"dim {s.dim} of input '{s.input}' is named both '{seen[key]}' and '{s.name}'; "
                                     "name each dimension once")
            seen[key] = s.name
        dims = tuple(
            SymbolicDim(s.name, s.input, s.dim, tuple((int(lo), int(hi)) for lo, hi in s.ranges))
            for s in sorted(self.symbolic_dims, key=lambda s: (positions[s.input], s.dim)))
        object.__setattr__(self, "symbolic_dims", dims)
        # Lookups by name, so queries stay linear on signatures with thousands of inputs (not fields: equality and
        # the canonical form ignore them).
        object.__setattr__(self, "_positions", positions)
        by_symbol: Dict[str, List[SymbolicDim]] = {}
        for s in dims:
            by_symbol.setdefault(s.name, []).append(s)
        object.__setattr__(self, "_by_symbol", by_symbol)

    # -- construction -------------------------------------------------------

    @classmethod
    def from_bounds(cls, inputs: Union[Mapping[str, Sequence[Any]], Sequence[Tuple[str, Sequence[Any]]]],
                    symbolic_dims: Optional[Any] = None, num_profiles: Optional[int] = None) -> "Signature":
        """From explicit bounds: ``inputs`` maps each input name (in binding
        order) to one entry per profile, each ``(min, opt, max)`` or
        ``{"min", "opt", "max"}``. ``symbolic_dims``: see :meth:`_symbols`.
        ``num_profiles`` defaults to the number of entries (1 for no inputs)."""
        items = list(inputs.items()) if isinstance(inputs, Mapping) else list(inputs)
        parsed: List[InputSignature] = []
        for name, per_profile in items:
            if not isinstance(name, str):
                raise SignatureError(f"input names must be strings, got {name!r}")
            if isinstance(per_profile, (Mapping, str, bytes)) or not isinstance(per_profile, Iterable):
                raise SignatureError(f"input '{name}' needs a list with one bounds entry per profile, got "
                                     f"{per_profile!r}")
            parsed.append(InputSignature(name, tuple(
                _bounds_from(b, f"input '{name}' profile {p}") for p, b in enumerate(per_profile))))
        if num_profiles is None:
            num_profiles = len(parsed[0].profiles) if parsed else 1
        return cls(num_profiles, tuple(parsed), cls._symbols(parsed, num_profiles, symbolic_dims))

    @classmethod
    def from_torch_trt(cls, profiles: Sequence[Mapping[str, Any]], symbolic_dims: Optional[Any] = None,
                       input_order: Optional[Sequence[str]] = None) -> "Signature":
        """From a Torch-TensorRT-like description: one dict per profile,
        ``{input_name: {"min_shape", "opt_shape", "max_shape"}}`` (``min/opt/max``
        and ``{"shape": [...]}`` for a static input are accepted too). Every
        profile must describe the same inputs. Inputs follow ``input_order``, or
        the order of the first profile's dict."""
        if isinstance(profiles, Mapping) or not isinstance(profiles, Sequence) or not profiles:
            raise SignatureError("profiles must be a non-empty list with one {input: bounds} dict per profile")
        for p, prof in enumerate(profiles):
            if not isinstance(prof, Mapping):
                raise SignatureError(f"profile {p} must be a dict {{input_name: bounds}}, got {type(prof).__name__}")
        names = list(input_order) if input_order is not None else list(profiles[0])
        for p, prof in enumerate(profiles):
            missing = [n for n in names if n not in prof]
            extra = [n for n in prof if n not in names]
            if missing or extra:
                detail = "; ".join(x for x in (
                    f"missing {', '.join(repr(n) for n in missing)}" if missing else "",
                    f"unexpected {', '.join(repr(n) for n in extra)}" if extra else "") if x)
                raise SignatureError(f"profile {p} describes different inputs than "
                                     f"{'input_order' if input_order is not None else 'profile 0'} ({detail}); "
                                     "every profile must give bounds for the same inputs")
        inputs = [(n, [prof[n] for prof in profiles]) for n in names]
        return cls.from_bounds(inputs, symbolic_dims, num_profiles=len(profiles))

    @staticmethod
    def _symbols(inputs: Sequence[InputSignature], num_profiles: int, spec: Optional[Any]) -> Tuple[SymbolicDim, ...]:
        """``spec`` names dimensions, ranges derived from the bounds:
        ``{"seq_len": [("input_ids", 1), ("position_ids", 1)]}`` or
        ``{"seq_len": ("input_ids", 1)}``; or a list of
        :class:`SymbolicDim` / ``{"name", "input", "dim"[, "ranges"]}`` (explicit
        ranges are kept as given)."""
        if not spec:
            return ()
        by_name = {i.name: i for i in inputs}
        out: List[SymbolicDim] = []

        def derived(name: str, inp: Any, dim: Any) -> SymbolicDim:
            if inp not in by_name:
                raise SignatureError(f"symbolic dim '{name}' refers to input {inp!r}, which has no bounds; described "
                                     f"inputs: {', '.join(by_name) or 'none'}")
            d = _int(dim, f"symbolic dim '{name}' dim")
            rank = by_name[inp].rank
            if d >= rank:
                raise SignatureError(f"symbolic dim '{name}' is dim {d} of input '{inp}', which has rank {rank}")
            return SymbolicDim(name, inp, d, tuple(b.range(d) for b in by_name[inp].profiles))

        if isinstance(spec, Mapping):
            for name, where in spec.items():
                if (isinstance(where, (list, tuple)) and len(where) == 2 and isinstance(where[0], str)):
                    where = [where]
                if isinstance(where, (str, bytes, Mapping)) or not isinstance(where, Iterable):
                    raise SignatureError(f"symbolic dim '{name}' needs a list of (input, dim) pairs, got {where!r}")
                for pair in where:
                    if not isinstance(pair, (list, tuple)) or len(pair) != 2:
                        raise SignatureError(f"symbolic dim '{name}': {pair!r} is not an (input, dim) pair")
                    out.append(derived(str(name), pair[0], pair[1]))
            return tuple(out)
        for i, s in enumerate(spec):
            if isinstance(s, SymbolicDim):
                out.append(s)
            elif isinstance(s, Mapping) and {"name", "input", "dim"} <= set(s):
                if "ranges" in s:
                    rs = s["ranges"]
                    if isinstance(rs, (str, bytes, Mapping)) or not isinstance(rs, Iterable):
                        raise SignatureError(f"symbolic dim '{s['name']}' ranges must be a list of [lo, hi]")
                    ranges = []
                    for p, r in enumerate(rs):
                        r = _shape(r, f"symbolic dim '{s['name']}' range {p}")
                        if len(r) != 2:
                            raise SignatureError(f"symbolic dim '{s['name']}' range {p} is {list(r)}; a range is "
                                                 "[lo, hi]")
                        ranges.append((r[0], r[1]))
                    out.append(SymbolicDim(str(s["name"]), str(s["input"]),
                                           _int(s["dim"], f"symbolic dim '{s['name']}' dim"), tuple(ranges)))
                else:
                    out.append(derived(str(s["name"]), s["input"], s["dim"]))
            else:
                raise SignatureError(f"symbolic_dims[{i}] must be {{'name', 'input', 'dim'}} or a SymbolicDim, got "
                                     f"{s!r}")
        return tuple(out)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Signature":
        """From the JSON object form (``{"num_profiles", "inputs", "symbolic_dims"}``)."""
        if not isinstance(d, Mapping):
            raise SignatureError(f"a signature must be a JSON object, got {type(d).__name__}")
        for key in ("num_profiles", "inputs"):
            if key not in d:
                raise SignatureError(f"the signature has no '{key}'")
        inputs = d["inputs"]
        if not isinstance(inputs, list):
            raise SignatureError("'inputs' must be a list of {name, profiles}")
        parsed = []
        for i, inp in enumerate(inputs):
            if not isinstance(inp, Mapping) or "name" not in inp or "profiles" not in inp:
                raise SignatureError(f"inputs[{i}] must be {{'name': ..., 'profiles': [...]}}")
            if not isinstance(inp["name"], str):
                raise SignatureError(f"inputs[{i}].name must be a string")
            if not isinstance(inp["profiles"], list):
                raise SignatureError(f"inputs[{i}].profiles must be a list")
            parsed.append(InputSignature(inp["name"], tuple(
                _bounds_from(b, f"input '{inp['name']}' profile {p}") for p, b in enumerate(inp["profiles"]))))
        n = d["num_profiles"]
        dims = d.get("symbolic_dims", [])
        if not isinstance(dims, list):
            raise SignatureError("'symbolic_dims' must be a list")
        for i, s in enumerate(dims):
            if not isinstance(s, Mapping) or "ranges" not in s:
                raise SignatureError(f"symbolic_dims[{i}] must be {{'name', 'input', 'dim', 'ranges'}}")
        return cls(n, tuple(parsed), cls._symbols(parsed, n if isinstance(n, int) else 1, dims))

    @classmethod
    def from_json(cls, text: Union[str, bytes]) -> "Signature":
        """From JSON text (the value of the blob's ``profile_signature`` key)."""
        try:
            d = json.loads(text)
        except (ValueError, TypeError) as e:
            raise SignatureError(f"the signature is not valid JSON: {e}") from None
        return cls.from_dict(d)

    @classmethod
    def from_blob(cls, sig: Any) -> "Signature":
        """From :class:`etrt.blob.ProfileSignature` (what ``parse_blob`` returns)."""
        try:
            return cls(
                sig.num_profiles,
                tuple(InputSignature(i.name, tuple(
                    Bounds(tuple(p.min), tuple(p.opt), tuple(p.max)) for p in i.profiles)) for i in sig.inputs),
                tuple(SymbolicDim(s.name, s.input, s.dim, tuple(tuple(r) for r in s.ranges))
                      for s in sig.symbolic_dims),
            )
        except AttributeError as e:
            raise SignatureError(f"not an etrt.blob.ProfileSignature: {e}") from None

    # -- serialization -------------------------------------------------------

    def to_dict(self) -> Dict[str, Any]:
        """The JSON object form, keys in the canonical order."""
        return {
            "num_profiles": self.num_profiles,
            "inputs": [{"name": i.name, "profiles": [b.to_dict() for b in i.profiles]} for i in self.inputs],
            "symbolic_dims": [{"name": s.name, "input": s.input, "dim": s.dim, "ranges": [list(r) for r in s.ranges]}
                              for s in self.symbolic_dims],
        }

    def to_json(self) -> bytes:
        """Canonical JSON: compact, ASCII (non-ASCII as ``\\uXXXX``), keys in the
        fixed order -- the exact bytes :mod:`etrt.blob` embeds under
        ``profile_signature``. Equal signatures give equal bytes."""
        return json.dumps(self.to_dict(), separators=(",", ":")).encode("ascii")

    def to_blob(self) -> Any:
        """As :class:`etrt.blob.ProfileSignature`, for ``Metadata.profile_signature``."""
        from .. import blob

        return blob.ProfileSignature(
            num_profiles=self.num_profiles,
            inputs=[blob.SignatureInput(i.name, [blob.ProfileBounds(list(b.min), list(b.opt), list(b.max))
                                                 for b in i.profiles]) for i in self.inputs],
            symbolic_dims=[blob.SymbolicDim(s.name, s.input, s.dim, [tuple(r) for r in s.ranges])
                           for s in self.symbolic_dims],
        )

    # -- queries ---------------------------------------------------------------

    @property
    def input_names(self) -> List[str]:
        return [i.name for i in self.inputs]

    def input(self, name: str) -> InputSignature:
        k = self._positions.get(name)
        if k is None:
            raise KeyError(f"the signature describes no input '{name}' (it has: {', '.join(self.input_names)})")
        return self.inputs[k]

    @property
    def is_static(self) -> bool:
        """One profile, and every input admits exactly one shape: pins N>0 are
        ignored for such an engine (docs/design.md, decision 4)."""
        return self.num_profiles == 1 and all(i.is_static for i in self.inputs)

    def dynamic_dims(self) -> List[Tuple[str, int, int, int]]:
        """``(input, dim, lowest min, highest max)`` for every dimension that is not fixed."""
        out = []
        for i in self.inputs:
            for d in i.dynamic_dims():
                out.append((i.name, d, min(b.min[d] for b in i.profiles), max(b.max[d] for b in i.profiles)))
        return out

    def symbol_names(self) -> List[str]:
        """Distinct symbolic dimension names, in order of first appearance."""
        return list(dict.fromkeys(s.name for s in self.symbolic_dims))

    def symbol_ranges(self, name: str) -> Tuple[Tuple[int, int], ...]:
        """Per profile ``(lo, hi)`` of symbol ``name`` (from its first
        occurrence; :meth:`problems` reports occurrences that disagree)."""
        occurrences = self._by_symbol.get(name)
        if occurrences:
            return occurrences[0].ranges
        raise KeyError(f"the signature names no symbolic dim '{name}' (it has: {', '.join(self.symbol_names())})")

    def regime(self, i: int) -> Regime:
        """What profile ``i`` admits: every input's bounds and every named symbol's range."""
        if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < self.num_profiles:
            raise IndexError(f"profile {i} does not exist; the signature has profiles 0..{self.num_profiles - 1}")
        symbols: Dict[str, Tuple[int, int]] = {}
        for s in self.symbolic_dims:
            symbols.setdefault(s.name, s.ranges[i])
        return Regime(i, {inp.name: inp.profiles[i] for inp in self.inputs}, symbols)

    def regimes(self) -> List[Regime]:
        return [self.regime(i) for i in range(self.num_profiles)]

    def fitting_profiles(self, shapes: Mapping[str, Sequence[int]]) -> List[int]:
        """Indices of the profiles whose bounds admit ``shapes`` (``{input: shape}``)."""
        return [r.index for r in self.regimes() if r.contains(shapes)]

    def problems(self) -> List[str]:
        """Internal inconsistencies a well-formed signature can still have:
        a symbol's range that differs from the bounds of the dimension it names,
        and one symbol name whose occurrences disagree. Empty when consistent."""
        out = []
        by_name = {i.name: i for i in self.inputs}
        for s in self.symbolic_dims:
            actual = tuple(b.range(s.dim) for b in by_name[s.input].profiles)
            bad = [p for p in range(self.num_profiles) if s.ranges[p] != actual[p]]
            if bad:
                detail = ", ".join(f"profile {p} says {format_range(*s.ranges[p])} but the input's bounds are "
                                   f"{format_range(*actual[p])}" for p in bad)
                out.append(f"symbolic dim '{s.name}' (dim {s.dim} of input '{s.input}'): {detail}")
        for name in self.symbol_names():
            occ = self._by_symbol[name]
            first = occ[0]
            for other in occ[1:]:
                bad = [p for p in range(self.num_profiles) if other.ranges[p] != first.ranges[p]]
                if bad:
                    detail = ", ".join(f"profile {p}: {format_range(*first.ranges[p])} vs "
                                       f"{format_range(*other.ranges[p])}" for p in bad)
                    out.append(f"symbolic dim '{name}' is dim {first.dim} of '{first.input}' and dim {other.dim} of "
                               f"'{other.input}' with different ranges ({detail})")
        return out

    def describe(self) -> List[str]:
        """One line per profile (see :meth:`Regime.describe`)."""
        return [r.describe() for r in self.regimes()]
