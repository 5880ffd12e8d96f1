"""Typed reads of parsed metadata JSON into :class:`Metadata`, with the
paths, order and messages of ``src/blob/metadata_reader.cpp``."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from .format import (ALIAS_KIND_KV_CACHE_UPDATE, MAX_ALIASES, MAX_IO_BINDINGS, MAX_PROFILE_ENTRIES, MAX_PROFILES,
                     MAX_STATES, MAX_SYMBOLIC_DIMS, _INT32, _INT64, AliasedIo, BlobError, DelegateState, IoBinding,
                     Metadata, ProfileBounds,
                     ProfileSignature, SignatureInput, SymbolicDim, _fail, _too_many_entries,
                     _too_many_profile_entries)
from .semantics import _validate_semantics


def _type_name(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, int):
        return "an integer"
    if isinstance(v, float):
        return "a number"
    if isinstance(v, str):
        return "a string"
    if isinstance(v, list):
        return "an array"
    if isinstance(v, dict):
        return "an object"
    return "an unsupported value"


_MISSING = object()


class _Decoder:
    """Typed reads with the same paths, order and messages as src/blob/metadata_reader.cpp."""

    def wrong_type(self, path: str, expected: str, v: Any) -> BlobError:
        return _fail(f"metadata field '{path}' must be {expected}, got {_type_name(v)}; re-export the model")

    def get(self, obj: Dict[str, Any], key: str, prefix: str, read, default: Any = _MISSING) -> Any:
        if key not in obj:
            if default is _MISSING:
                raise _fail(f"metadata has no '{prefix}{key}'; re-export the model")
            return default() if callable(default) else default
        return read(obj[key], prefix + key)

    def string(self, v: Any, path: str) -> str:
        if not isinstance(v, str):
            raise self.wrong_type(path, "a string", v)
        try:
            v.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate, which UTF-8 cannot carry
            raise _fail(f"{path} is not valid UTF-8; re-export the model") from None
        return v

    def boolean(self, v: Any, path: str) -> bool:
        if not isinstance(v, bool):
            raise self.wrong_type(path, "a boolean", v)
        return v

    def int64(self, v: Any, path: str) -> int:
        if not isinstance(v, int) or isinstance(v, bool):
            raise self.wrong_type(path, "an integer", v)
        return self._in_range(v, path, _INT64, 64)

    def int32(self, v: Any, path: str) -> int:
        # 64-bit first, as the C++ reader narrows from int64_t.
        return self._in_range(self.int64(v, path), path, _INT32, 32)

    def _in_range(self, v: int, path: str, bounds: Tuple[int, int], bits: int) -> int:
        if not bounds[0] <= v <= bounds[1]:
            raise _fail(
                f"metadata field '{path}' is {v}, outside the range of a {bits}-bit signed integer; "
                "re-export the model"
            )
        return v

    def ints(self, v: Any, path: str) -> List[int]:
        if not isinstance(v, list):
            raise self.wrong_type(path, "an array", v)
        return [self.int64(x, f"{path}[{i}]") for i, x in enumerate(v)]

    def array(self, read, limit: Optional[int] = None):
        """Refuses more than ``limit`` entries before building any."""

        def read_array(v: Any, path: str) -> list:
            if not isinstance(v, list):
                raise self.wrong_type(path, "an array", v)
            if limit is not None and len(v) > limit:
                raise _too_many_entries(path, len(v), limit)
            return [read(x, f"{path}[{i}]") for i, x in enumerate(v)]

        return read_array

    # Entries of the signature's inputs and symbolic_dims arrays, for the table-size limits.
    signature_inputs = 0
    symbolic_dims = 0

    def per_profile(self, o: Dict[str, Any], key: str, prefix: str, rows: int, what: str, read) -> list:
        """A per-profile array (an input's profiles, a symbolic dim's ranges) of
        one of ``rows`` rows: at most MAX_PROFILES entries, and rows x entries
        at most MAX_PROFILE_ENTRIES, checked before anything is built for it."""
        if key not in o:
            raise _fail(f"metadata has no '{prefix}{key}'; re-export the model")
        v = o[key]
        if isinstance(v, list) and len(v) <= MAX_PROFILES and rows * len(v) > MAX_PROFILE_ENTRIES:
            raise _too_many_profile_entries(what, rows, len(v))
        return self.array(read, MAX_PROFILES)(v, prefix + key)

    def obj(self, v: Any, path: str) -> Dict[str, Any]:
        if not isinstance(v, dict):
            raise self.wrong_type(path, "an object", v)
        return v

    def binding(self, v: Any, path: str) -> IoBinding:
        o, p = self.obj(v, path), path + "."
        return IoBinding(
            name=self.get(o, "name", p, self.string),
            dtype=self.get(o, "dtype", p, self.string, ""),
            shape=self.get(o, "shape", p, self.ints, list),
            is_input=self.get(o, "is_input", p, self.boolean, True),
        )

    def alias(self, v: Any, path: str) -> AliasedIo:
        o, p = self.obj(v, path), path + "."
        output = self.get(o, "output", p, self.string)
        inp = self.get(o, "input", p, self.string)
        # Upstream's C++ reader treats an empty kind like a missing one. Any
        # other kind is kept as is, so tools can show it; the runtime accepts
        # only ALIAS_KINDS and refuses the delegate at load otherwise.
        kind = self.get(o, "kind", p, self.string, "") or ALIAS_KIND_KV_CACHE_UPDATE
        return AliasedIo(output=output, input=inp, kind=kind)

    def bounds(self, v: Any, path: str) -> ProfileBounds:
        o, p = self.obj(v, path), path + "."
        return ProfileBounds(
            min=self.get(o, "min", p, self.ints),
            opt=self.get(o, "opt", p, self.ints),
            max=self.get(o, "max", p, self.ints),
        )

    def signature_input(self, v: Any, path: str) -> SignatureInput:
        o, p = self.obj(v, path), path + "."
        return SignatureInput(
            name=self.get(o, "name", p, self.string),
            profiles=self.per_profile(o, "profiles", p, self.signature_inputs, "inputs", self.bounds),
        )

    def range_(self, v: Any, path: str) -> Tuple[int, int]:
        if not isinstance(v, list):
            raise self.wrong_type(path, "an array of two integers [lo, hi]", v)
        if len(v) != 2:
            raise _fail(
                f"metadata field '{path}' must be an array of two integers [lo, hi], got an array of {len(v)}; "
                "re-export the model"
            )
        return (self.int64(v[0], f"{path}[0]"), self.int64(v[1], f"{path}[1]"))

    def symbolic_dim(self, v: Any, path: str) -> SymbolicDim:
        o, p = self.obj(v, path), path + "."
        return SymbolicDim(
            name=self.get(o, "name", p, self.string),
            input=self.get(o, "input", p, self.string),
            dim=self.get(o, "dim", p, self.int32),
            ranges=self.per_profile(o, "ranges", p, self.symbolic_dims, "symbolic dims", self.range_),
        )

    def signature(self, v: Any, path: str) -> ProfileSignature:
        o, p = self.obj(v, path), path + "."
        self.signature_inputs = len(o["inputs"]) if isinstance(o.get("inputs"), list) else 0
        self.symbolic_dims = len(o["symbolic_dims"]) if isinstance(o.get("symbolic_dims"), list) else 0
        return ProfileSignature(
            num_profiles=self.get(o, "num_profiles", p, self.int32),
            inputs=self.get(o, "inputs", p, self.array(self.signature_input, MAX_IO_BINDINGS)),
            symbolic_dims=self.get(o, "symbolic_dims", p, self.array(self.symbolic_dim, MAX_SYMBOLIC_DIMS), list),
        )

    def state(self, v: Any, path: str) -> DelegateState:
        o, p = self.obj(v, path), path + "."
        return DelegateState(
            name=self.get(o, "name", p, self.string),
            input=self.get(o, "input", p, self.string),
            output=self.get(o, "output", p, self.string),
            initial_value=self.get(o, "initial_value", p, self.string, ""),
        )

    def metadata(self, doc: Any) -> Metadata:
        # Keys in the order the writer emits them, so the first problem
        # reported is the first in the text. Unknown keys are ignored.
        if not isinstance(doc, dict):
            raise _fail(f"metadata must be a JSON object, got {_type_name(doc)}; re-export the model")
        m = Metadata(
            io_bindings=self.get(doc, "io_bindings", "", self.array(self.binding, MAX_IO_BINDINGS)),
            aliased_io=self.get(doc, "aliased_io", "", self.array(self.alias, MAX_ALIASES), list),
            hardware_compatible=self.get(doc, "hardware_compatible", "", self.boolean, False),
            device_id=self.get(doc, "device_id", "", self.int64, 0),
            serialized_metadata=self.get(doc, "serialized_metadata", "", self.string, ""),
            target_platform=self.get(doc, "target_platform", "", self.string, ""),
            profile_signature=self.get(doc, "profile_signature", "", self.signature, None),
            delegate_state=self.get(doc, "delegate_state", "", self.array(self.state, MAX_STATES), list),
        )
        _validate_semantics(m)
        return m
